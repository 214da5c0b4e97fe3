from __future__ import annotations

from collections.abc import Iterator

import pytest

from cronwheel_local.config import parse_config
from cronwheel_local.stack import LocalStack
from tests.support.api import Api
from tests.support.target import RecordingTarget, recording_target

ACME_SECRET = "acme-signing-secret"
CONFIG = {
    "shards": 4,
    "tick_interval_s": 0.5,
    "tenants": [
        {
            "id": "acme",
            "signing_secret": ACME_SECRET,
            "api_keys": [
                {"key": "acme-admin-key", "role": "admin"},
                {"key": "acme-operator-key", "role": "operator"},
                {"key": "acme-viewer-key", "role": "viewer"},
            ],
        },
        {"id": "globex", "api_keys": [{"key": "globex-admin-key", "role": "admin"}]},
        {
            "id": "initech",
            "max_concurrency": 3,
            "api_keys": [{"key": "initech-operator-key", "role": "operator"}],
        },
    ],
}


@pytest.fixture(scope="session")
def stack() -> Iterator[LocalStack]:
    with LocalStack(parse_config(CONFIG), port=0) as running:
        yield running


@pytest.fixture(scope="session")
def api(stack: LocalStack) -> Api:
    return Api(stack.url, "acme-operator-key")


@pytest.fixture(scope="session")
def target() -> Iterator[RecordingTarget]:
    with recording_target() as recording:
        yield recording
