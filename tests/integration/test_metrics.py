"""Handlers emit their metrics as EMF with the tenant dimension (what CloudWatch ingests)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from cronwheel import metric_names as names
from cronwheel.dispatch_queue import DispatchMessage
from cronwheel.domain.model import HttpTarget, Principal, Priority, RetryPolicy, Role, Tenant
from cronwheel.runtime import reset_runtime, runtime
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel_local.lambda_context import LocalContext
from functions.dispatch import handler as dispatch_fn
from tests.integration.conftest import provision
from tests.support.target import RecordingTarget, recording_target


@pytest.fixture
def deployed(aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingTarget]:
    env = provision("emf")
    for key, value in {**env, "POWERTOOLS_SERVICE_NAME": "cronwheel"}.items():
        monkeypatch.setenv(key, value)
    reset_runtime()
    for tenant in ("acme", "globex"):
        runtime().store.put_tenant(Tenant(id=tenant, signing_secrets=["s"]))
    with recording_target() as target:
        yield target
    reset_runtime()


def _job(tenant: str, url: str, max_attempts: int) -> DispatchMessage:
    rt = runtime()
    submitted = JobService(rt.store, rt.queue, rt.settings).submit(
        Principal(tenant=tenant, role=Role.OPERATOR, key_id="k"),
        JobRequest(
            target=HttpTarget(url=url),
            payload={},
            retry=RetryPolicy(max_attempts=max_attempts, initial_s=1),
            priority=Priority.NORMAL,
        ),
        datetime.now(UTC),
    )
    return DispatchMessage(submitted.execution.id, 0, submitted.execution.due_at)


def _total(document: dict[str, Any], metric: str) -> float:
    value = document[metric]
    return float(sum(value)) if isinstance(value, list) else float(value)


def _emf_documents(output: str) -> list[dict[str, Any]]:
    documents = []
    for line in output.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            documents.append(json.loads(line))
    return documents


def test_dispatch_emits_outcomes_and_fire_lag_per_tenant(
    deployed: RecordingTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a batch with an acme job whose target succeeds and a globex one whose target fails
    messages = [
        _job("acme", f"{deployed.base_url}/ok", 3),
        _job("globex", f"{deployed.base_url}/fail", 1),
    ]
    event = {
        "Records": [
            {
                "messageId": str(i),
                "receiptHandle": "r",
                "body": m.to_json(),
                "attributes": {},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q",
                "awsRegion": "us-east-1",
            }
            for i, m in enumerate(messages)
        ]
    }
    capsys.readouterr()

    # When the dispatch handler runs the batch
    dispatch_fn.handler(event, LocalContext("cronwheel-dispatch"))

    # Then one EMF document per tenant carries the tenant dimension and the outcome metrics
    documents = {d[names.TENANT_DIMENSION]: d for d in _emf_documents(capsys.readouterr().out)}
    assert set(documents) == {"acme", "globex"}
    for document in documents.values():
        directive = document["_aws"]["CloudWatchMetrics"][0]
        assert directive["Namespace"] == names.NAMESPACE
        assert set(directive["Dimensions"][0]) == {"service", names.TENANT_DIMENSION}
        assert document["service"] == "cronwheel"
    assert _total(documents["acme"], names.FIRED) == 1
    assert _total(documents["acme"], names.SUCCEEDED) == 1
    assert _total(documents["acme"], names.FIRE_LAG_MS) >= 0
    assert _total(documents["globex"], names.FAILED) == 1
    assert _total(documents["globex"], names.DEAD) == 1
    assert names.SUCCEEDED not in documents["globex"]
