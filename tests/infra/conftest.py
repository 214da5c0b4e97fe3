"""Synthesize the CDK app once per test session: jsii synthesis is slow, the templates are not.

Bundling is skipped (context `aws:cdk:bundling-stacks` = []), so the tests never run pip; cdk-nag
is attached exactly as in `app.py`, so a finding that is not acknowledged fails the session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App  # noqa: E402

from infra import build_app  # noqa: E402
from infra.config import StageSettings  # noqa: E402
from infra.paths import CDK_JSON  # noqa: E402
from infra.stack import CronwheelStack  # noqa: E402

STAGES = ("dev", "prod")
SKIP_BUNDLING = {"aws:cdk:bundling-stacks": []}


def cdk_context(**overrides: Any) -> dict[str, Any]:
    context: dict[str, Any] = json.loads(Path(CDK_JSON).read_text())["context"]
    return {**context, **SKIP_BUNDLING, **overrides}


@dataclass(frozen=True)
class Synthesized:
    """Both stages, synthesized together as `python app.py` does without `-c stage=`."""

    outdir: Path
    stacks: Mapping[str, CronwheelStack]
    templates: Mapping[str, dict[str, Any]]

    def settings(self, stage: str) -> StageSettings:
        return self.stacks[stage].settings

    def template_path(self, stage: str) -> Path:
        return self.outdir / f"{self.stacks[stage].stack_name}.template.json"


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = App(context=cdk_context(), outdir=str(outdir))
    stacks = build_app(app)
    assembly = app.synth()
    templates = {
        stage: assembly.get_stack_by_name(stack.stack_name).template
        for stage, stack in stacks.items()
    }
    yield Synthesized(outdir=outdir, stacks=stacks, templates=templates)


@pytest.fixture(params=STAGES)
def stage(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def template(synthesized: Synthesized, stage: str) -> dict[str, Any]:
    return synthesized.templates[stage]


@pytest.fixture
def prod(synthesized: Synthesized) -> dict[str, Any]:
    return synthesized.templates["prod"]
