"""Layers: the shared `cronwheel` package, and the third-party dependencies built without Docker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.paths import ASSET_EXCLUDES, COMMON_LAYER_DIR, DEPENDENCIES_DIR

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64

# Wheel selection for the Lambda runtime (CPython 3.12 on Amazon Linux 2023, glibc 2.34, arm64).
# pip only *selects* prebuilt wheels for that platform, so nothing is compiled or executed for the
# target; a package without such a wheel fails the build instead of shipping a host binary.
PIP_TARGET_ARGS = (
    "--platform",
    "manylinux2014_aarch64",
    "--platform",
    "manylinux_2_34_aarch64",
    "--only-binary=:all:",
    "--implementation",
    "cp",
    "--python-version",
    "3.12",
)


@jsii.implements(ILocalBundling)
class PipLayerBundling:
    """Builds a layer from a requirements file with the host's pip, so synthesis needs no Docker.

    Lambda mounts a layer at /opt, so packages go to `<output>/python`."""

    def __init__(self, requirements: Path) -> None:
        self._requirements = requirements

    def try_bundle(self, output_dir: str, options: Any = None, **_: Any) -> bool:
        target = Path(output_dir) / "python"
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-compile",
                "--upgrade",
                "--target",
                str(target),
                *PIP_TARGET_ARGS,
                "--requirement",
                str(self._requirements),
            ],
            check=True,
        )
        return True


class Layers(Construct):
    """`common`: the `cronwheel` package as it is in the repository (`layers/common/python/...`).
    `dependencies`: pip-installed wheels from `infra/dependencies/requirements.txt`."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.common = self._build_common()
        self.dependencies = self._build_dependencies()

    @property
    def all(self) -> list[lambda_.ILayerVersion]:
        return [self.dependencies, self.common]

    def _build_common(self) -> lambda_.LayerVersion:
        return lambda_.LayerVersion(
            self,
            "Common",
            code=lambda_.Code.from_asset(str(COMMON_LAYER_DIR), exclude=ASSET_EXCLUDES),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="cronwheel shared package (domain, services, store, targets, settings)",
        )

    def _build_dependencies(self) -> lambda_.LayerVersion:
        requirements = DEPENDENCIES_DIR / "requirements.txt"
        pip_args = " ".join(PIP_TARGET_ARGS)
        return lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(
                str(DEPENDENCIES_DIR),
                bundling=BundlingOptions(
                    image=RUNTIME.bundling_image,
                    # Used only where local bundling is impossible; same result, in Docker.
                    command=[
                        "bash",
                        "-c",
                        "pip install --no-compile --target /asset-output/python "
                        f"{pip_args} --requirement requirements.txt",
                    ],
                    local=PipLayerBundling(requirements),
                ),
            ),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="cronwheel third-party dependencies (Powertools, PynamoDB, croniter, ...)",
        )
