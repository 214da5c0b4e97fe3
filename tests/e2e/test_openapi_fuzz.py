"""Schemathesis against the served OpenAPI document: whatever a client sends, valid or not, the
API answers without a 5xx, refuses invalid input with a 4xx, and answers with a status code the
document lists and a body matching its schema.

It runs as the `fuzz` tenant's admin, so the destructive calls it makes (revoking keys, rotating
the signing secret, deleting schedules) touch no other test's tenant. Valid inputs are aimed at
real records of that tenant (created once per module), invalid ones at whatever ids Schemathesis
makes up.

`schemathesis.pytest.from_fixture` fails under pytest 9 (it reads the removed `Item._nodeid`), and
the schema can only be loaded once the session's stack is up; so each operation gets its own
parametrized test that drives Schemathesis' strategy for it with Hypothesis directly."""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from cronwheel_local.stack import LocalStack
from functions.api.handler import openapi_document
from tests.support.api import Api

FUZZ_KEY = "fuzz-admin-key"
# Raise it for a deeper search: CRONWHEEL_FUZZ_EXAMPLES=200 pytest tests/e2e/test_openapi_fuzz.py
EXAMPLES_PER_OPERATION = int(os.environ.get("CRONWHEEL_FUZZ_EXAMPLES", "10"))
CHECKS = [
    not_a_server_error,
    negative_data_rejection,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
NEVER_CALLED = "http://127.0.0.1:9/never"


def _operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): operation
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }


def _has_inputs(operation: dict[str, Any]) -> bool:
    return bool(operation.get("parameters") or operation.get("requestBody"))


# The served document is built by this very function; the test ids come from it at collection,
# and each test looks its operation up in the document fetched from the stack.
_DOCUMENT_OPERATIONS = _operations(openapi_document())
CASES = [
    pytest.param(method, path, mode, id=f"{method} {path} {mode.value}")
    for (method, path), operation in sorted(_DOCUMENT_OPERATIONS.items())
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    # Negative data needs an input to spoil.
    if mode is GenerationMode.POSITIVE or _has_inputs(operation)
]


@pytest.fixture(scope="module")
def served_document(stack: LocalStack) -> dict[str, Any]:
    status, document = Api(stack.url, FUZZ_KEY).get("/v1/openapi.json")
    assert status == 200, document
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def served_schema(stack: LocalStack, served_document: dict[str, Any]) -> schemathesis.BaseSchema:
    schema = schemathesis.openapi.from_dict(served_document)
    schema.config.update(base_url=stack.url, headers={"Authorization": f"Bearer {FUZZ_KEY}"})
    return schema


@pytest.fixture(scope="module")
def record_ids(stack: LocalStack) -> dict[str, str]:
    """Path parameters naming real records of the fuzz tenant."""
    admin = Api(stack.url, FUZZ_KEY)
    target = {"type": "http", "url": NEVER_CALLED}
    status, schedule = admin.post(
        "/v1/schedules",
        {"name": "fuzzed", "cron": "0 0 1 1 *", "target": target, "retry": {"max_attempts": 1}},
    )
    assert status == 201, schedule
    status, job = admin.post("/v1/jobs", {"target": target, "delay_s": 3600})
    assert status == 201, job
    status, key = admin.post("/v1/tenant/api-keys", {"role": "viewer"})
    assert status == 201, key
    return {
        "schedule_id": schedule["id"],
        "job_id": job["id"],
        "execution_id": job["execution_id"],
        "key_id": key["key_id"],
    }


@pytest.mark.parametrize(("method", "path", "mode"), CASES)
def test_every_answer_is_documented_and_never_a_server_error(
    served_schema: schemathesis.BaseSchema,
    record_ids: dict[str, str],
    method: str,
    path: str,
    mode: GenerationMode,
) -> None:
    operation = served_schema[path][method]
    real_ids = None
    if mode is GenerationMode.POSITIVE:
        real_ids = {name: value for name, value in record_ids.items() if f"{{{name}}}" in path}
    statuses: list[int] = []

    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=real_ids))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def answers_conform(case: schemathesis.Case) -> None:
        statuses.append(case.call_and_validate(checks=CHECKS).status_code)

    answers_conform()

    # The key was accepted: the examples reached the operation, not just the authorizer.
    assert set(statuses) - {401}, statuses
