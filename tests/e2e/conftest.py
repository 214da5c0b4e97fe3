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
        # The route matrix (test_route_matrix.py) acts in umbrella and probes hooli's records;
        # the OpenAPI fuzzer (test_openapi_fuzz.py) deletes keys and rotates secrets in fuzz.
        {
            "id": "umbrella",
            "api_keys": [
                {"key": "umbrella-admin-key", "role": "admin"},
                {"key": "umbrella-operator-key", "role": "operator"},
                {"key": "umbrella-viewer-key", "role": "viewer"},
            ],
        },
        {"id": "hooli", "api_keys": [{"key": "hooli-admin-key", "role": "admin"}]},
        {"id": "fuzz", "api_keys": [{"key": "fuzz-admin-key", "role": "admin"}]},
        # Quotas (test_quotas.py) and fairness between a noisy and a quiet tenant (test_fairness.py).
        {"id": "quotaco", "api_keys": [{"key": "quotaco-admin-key", "role": "admin"}]},
        {"id": "noisyco", "api_keys": [{"key": "noisyco-operator-key", "role": "operator"}]},
        {"id": "quietco", "api_keys": [{"key": "quietco-operator-key", "role": "operator"}]},
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
