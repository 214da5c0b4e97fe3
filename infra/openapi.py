"""Export the API's OpenAPI document next to the templates at synth time.

The runtime serves the same document at `GET /v1/openapi.json`; it is generated from the api
handler's resolver, so the export imports that module in a child process (the handler's imports
must not leak into the CDK process) and asks for `get_openapi_json_schema()`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from infra.paths import COMMON_PYTHON_DIR, FUNCTIONS_DIR, REPO_ROOT

HANDLER_MODULE = "functions.api.handler"
OPENAPI_FILE = "openapi.json"

_EXPORT = """
import json
import sys
import functions.api.handler as handler

# Prefer the function that serves GET /v1/openapi.json, so the export is that very document.
if callable(getattr(handler, "openapi_document", None)):
    sys.stdout.write(json.dumps(handler.openapi_document(), indent=2))
    sys.exit(0)
resolver = next(
    (
        value
        for value in vars(handler).values()
        if not isinstance(value, type) and hasattr(value, "get_openapi_json_schema")
    ),
    None,
)
if resolver is None:
    sys.exit("functions.api.handler has no resolver with get_openapi_json_schema()")
sys.stdout.write(resolver.get_openapi_json_schema())
"""


@dataclass(frozen=True)
class ExportResult:
    path: Path | None
    note: str


def export_openapi(outdir: str | os.PathLike[str]) -> ExportResult:
    """Write `<outdir>/openapi.json`; without the api handler module, skip and say why."""
    if not (FUNCTIONS_DIR / "api" / "handler.py").is_file():
        return ExportResult(None, f"OpenAPI export skipped: {HANDLER_MODULE} does not exist yet")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(COMMON_PYTHON_DIR)]),
        # Powertools must not try to reach X-Ray or emit metrics while being imported here.
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }
    completed = subprocess.run(
        [sys.executable, "-c", _EXPORT],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"OpenAPI export failed: importing {HANDLER_MODULE} raised:\n{completed.stderr}"
        )
    path = Path(outdir) / OPENAPI_FILE
    path.write_text(completed.stdout, encoding="utf-8")
    return ExportResult(path, f"OpenAPI document written to {path}")
