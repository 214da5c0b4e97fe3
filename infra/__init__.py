"""CDK code for cronwheel: `build_app` adds one stack per stage; the stack only composes."""

from __future__ import annotations

import sys

from infra.paths import COMMON_PYTHON_DIR, REPO_ROOT

# The constructs build tables, queues and function environments from the runtime's own specs
# (`cronwheel.store.tables`, `cronwheel.settings`, ...), so the layer's package must be importable.
for _path in (str(COMMON_PYTHON_DIR), str(REPO_ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from infra.app import build_app  # noqa: E402

__all__ = ["build_app"]
