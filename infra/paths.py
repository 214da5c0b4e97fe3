"""Where the pieces of the repository are, independent of the working directory."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = REPO_ROOT / "functions"
COMMON_LAYER_DIR = REPO_ROOT / "layers" / "common"
COMMON_PYTHON_DIR = COMMON_LAYER_DIR / "python"
DEPENDENCIES_DIR = Path(__file__).resolve().parent / "dependencies"
CDK_JSON = REPO_ROOT / "cdk.json"

# Never shipped to Lambda: byte code, caches and editor or packaging debris.
ASSET_EXCLUDES = [
    "**/__pycache__",
    "**/*.pyc",
    "**/.mypy_cache",
    "**/.pytest_cache",
    "**/.ruff_cache",
    "**/*.egg-info",
    "**/.DS_Store",
]
