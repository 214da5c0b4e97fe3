"""Synthesize the CDK app once per test session: jsii synthesis is slow, the templates are not.

Bundling is skipped (context `aws:cdk:bundling-stacks` = []), so the tests never run pip; cdk-nag
is attached exactly as in `app.py`, so a finding that is not acknowledged fails the session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# As in app.py: the jsii runtime's Node 20 banner is silenced only by naming the version.
_SILENCE = "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"
os.environ[_SILENCE] = ",".join(filter(None, [os.environ.get(_SILENCE), "20"]))

from aws_cdk import App  # noqa: E402

from infra import build_app  # noqa: E402
from infra.config import StageSettings  # noqa: E402
from infra.paths import FUNCTIONS_DIR  # noqa: E402
from infra.stack import CronwheelStack  # noqa: E402
from tests.infra.template_helpers import cdk_context  # noqa: E402

STAGES = ("dev", "prod")


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
    if not FUNCTIONS_DIR.is_dir():
        pytest.skip(f"{FUNCTIONS_DIR} does not exist yet: the function code asset needs it")
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
