#!/usr/bin/env python3
"""cronwheel CDK app: `python app.py [-c stage=dev|prod] [--outdir DIR]`, offline, no `cdk` CLI.

Without a stage, every stage of cdk.json is synthesized as its own stack (cronwheel-dev,
cronwheel-prod). Run by the `cdk` CLI, the CLI passes the context and the output directory.
cdk-nag's AwsSolutions checks run as a validation plugin: any finding not acknowledged with a
reason fails synthesis.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

# The jsii runtime prints an end-of-life banner on Node 20 unless this variable lists the major
# version ("1" is not enough); the project runs on Node 20 for now (docs/deploy.md).
_SILENCE = "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"
os.environ[_SILENCE] = ",".join(filter(None, [os.environ.get(_SILENCE), "20"]))

from aws_cdk import App  # noqa: E402

from infra import build_app  # noqa: E402
from infra.openapi import export_openapi  # noqa: E402
from infra.paths import CDK_JSON  # noqa: E402

log = logging.getLogger("cronwheel.app")


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="context value, as with `cdk -c` (e.g. -c stage=prod)",
    )
    parser.add_argument("--outdir", help="cloud assembly directory (default: cdk.out)")
    return parser.parse_args(argv)


def _context(pairs: list[str]) -> dict[str, object]:
    """cdk.json's context, then `-c` pairs; the CLI's own context (CDK_CONTEXT_JSON) wins."""
    context: dict[str, object] = json.loads(Path(CDK_JSON).read_text())["context"]
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            sys.exit(f"context must be KEY=VALUE, got {pair!r}")
        context[key] = value
    return context


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = _arguments(sys.argv[1:] if argv is None else argv)
    outdir = os.environ.get("CDK_OUTDIR") or args.outdir or "cdk.out"
    app = App(context=_context(args.context), outdir=outdir)
    build_app(app)
    assembly = app.synth()
    log.info(export_openapi(assembly.directory).note)


if __name__ == "__main__":
    main()
