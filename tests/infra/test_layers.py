"""Layers: the dependencies layer covers the runtime's dependencies and is built without Docker."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest

from infra.layers import PIP_TARGET_ARGS
from infra.paths import DEPENDENCIES_DIR, REPO_ROOT
from tests.infra.template_helpers import resources

pytestmark = pytest.mark.infra


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_the_layer_requirements_cover_the_runtime_dependencies() -> None:
    # Given pyproject's runtime dependencies and the layer's requirements
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    runtime = {_name(r) for r in pyproject["project"]["dependencies"]}
    lines = (DEPENDENCIES_DIR / "requirements.txt").read_text().splitlines()
    layer = {_name(line) for line in lines if line.strip() and not line.startswith("#")}
    # Then every runtime dependency is in the layer
    assert runtime <= layer, f"missing from the layer: {sorted(runtime - layer)}"


def test_pip_selects_wheels_for_python312_on_arm64_only() -> None:
    args = " ".join(PIP_TARGET_ARGS)
    assert "--platform manylinux2014_aarch64" in args
    assert "--only-binary=:all:" in args
    assert "--python-version 3.12" in args


def test_both_layers_target_python312_arm64(template: dict[str, Any]) -> None:
    layers = resources(template, "AWS::Lambda::LayerVersion").values()
    assert len(layers) == 2
    for layer in layers:
        assert layer["Properties"]["CompatibleRuntimes"] == ["python3.12"]
        assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
