"""Callback and long jobs on the local stack: the Step Functions state machine (moto's
interpreter) hands the attempt to the dispatcher, the target accepts, heartbeats and completes
through the API with its fencing token (docs/long-jobs.md)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from cronwheel.domain.instants import parse_instant
from cronwheel_local.stack import REGION, LocalStack
from tests.support.api import Api
from tests.support.target import Call, RecordingTarget, wait_for

# Long enough for a loaded machine to run a heartbeat through the API well within it.
HEARTBEAT_S = 4
HEARTBEAT_EVERY_S = 2.0
# The lease a heartbeat grants: the interval plus a grace of at most the interval.
LEASE_S = 2 * HEARTBEAT_S


def _submit(api: Api, target: dict[str, Any], max_attempts: int = 1) -> dict[str, Any]:
    status, job = api.post(
        "/v1/jobs",
        {
            "target": target,
            "payload": {"report": "nightly"},
            "retry": {"max_attempts": max_attempts, "backoff": "fixed", "initial_s": 1},
        },
    )
    assert status == 201, job
    return job


def _callback_target(recording: RecordingTarget, path: str = "callback", **fields: Any) -> dict:
    return {
        "type": "http",
        "url": f"{recording.base_url}/{path}",
        "callback": True,
        "heartbeat_s": HEARTBEAT_S,
        **fields,
    }


def _delivery(recording: RecordingTarget, execution_id: str, attempt: int = 1) -> Call:
    def delivered() -> Call | None:
        calls = [
            c
            for c in recording.calls_for(execution_id)
            if c.headers.get("X-Cronwheel-Attempt") == str(attempt)
        ]
        return calls[0] if calls else None

    call: Call = wait_for(delivered, timeout_s=30)
    return call


def _execution(api: Api, execution_id: str) -> dict[str, Any]:
    status, doc = api.get(f"/v1/executions/{execution_id}")
    assert status == 200, doc
    return dict(doc)


def _execution_when(
    api: Api, execution_id: str, states: set[str], timeout_s: float = 30
) -> dict[str, Any]:
    def settled() -> dict[str, Any] | None:
        doc = _execution(api, execution_id)
        return doc if doc["state"] in states else None

    result: dict[str, Any] = wait_for(settled, timeout_s=timeout_s, interval_s=0.2)
    return result


def _machine_runs(stack: LocalStack, execution_id: str) -> dict[str, str]:
    """Status of each state machine execution of this cronwheel execution, by name."""
    sfn = boto3.client("stepfunctions", region_name=REGION, endpoint_url=stack.endpoint_url)
    runs = sfn.list_executions(stateMachineArn=stack.long_job_state_machine_arn)["executions"]
    return {r["name"]: r["status"] for r in runs if r["name"].startswith(f"{execution_id}-")}


def _machine_runs_when(
    stack: LocalStack, execution_id: str, expected: dict[str, str]
) -> dict[str, str]:
    def ended() -> dict[str, str] | None:
        runs = _machine_runs(stack, execution_id)
        return runs if runs == expected else None

    try:
        result: dict[str, str] = wait_for(ended, timeout_s=20, interval_s=0.2)
    except AssertionError:
        assert _machine_runs(stack, execution_id) == expected
        raise
    return result


def _heartbeat(api: Api, execution_id: str, token: int) -> tuple[int, Any]:
    return api.post(f"/v1/executions/{execution_id}:heartbeat", {"fencing_token": token})


def _complete(api: Api, execution_id: str, token: int, **fields: Any) -> tuple[int, Any]:
    return api.post(f"/v1/executions/{execution_id}:complete", {"fencing_token": token, **fields})


def test_callback_job_that_heartbeats_outlives_several_leases_and_succeeds(
    api: Api, target: RecordingTarget, stack: LocalStack
) -> None:
    # Given a callback job whose target must heartbeat every 4 s (a lease of 8 s)
    job = _submit(api, _callback_target(target, timeout_s=300), max_attempts=2)
    execution_id = job["execution_id"]
    call = _delivery(target, execution_id)
    token = int(call.headers["X-Cronwheel-Fencing-Token"])
    # And the delivery told the target it must heartbeat and complete
    assert call.headers["X-Cronwheel-Callback"] == "true"
    assert call.headers["X-Cronwheel-Heartbeat-Seconds"] == str(HEARTBEAT_S)

    # When the target heartbeats every 2 s until its lease has moved three lease lengths on
    leases: list[datetime] = []
    while not leases or leases[-1] - leases[0] < timedelta(seconds=3 * LEASE_S):
        time.sleep(HEARTBEAT_EVERY_S)
        status, body = _heartbeat(api, execution_id, token)
        # Then each heartbeat is taken, and the attempt keeps running
        assert status == 200, body
        leases.append(parse_instant(body["lease_expires_at"], field="lease_expires_at"))
        assert _execution(api, execution_id)["state"] == "running"
    assert leases == sorted(leases)

    # When it completes
    status, done = _complete(api, execution_id, token, status="succeeded", output={"rows": 42})
    # Then the execution succeeded on its one attempt, which keeps the output
    assert status == 200, done
    assert done["state"] == "succeeded"
    execution = _execution(api, execution_id)
    assert execution["state"] == "succeeded"
    assert [a["attempt"] for a in execution["attempts"]] == [1]
    assert execution["attempts"][0]["outcome"] == "succeeded"
    assert execution["attempts"][0]["response_excerpt"] == '{"rows":42}'
    # And the target was delivered to once, and the state machine ran once and succeeded
    assert len(target.calls_for(execution_id)) == 1
    _machine_runs_when(stack, execution_id, {f"{execution_id}-1": "SUCCEEDED"})


def test_callback_job_that_stops_heartbeating_is_retried_then_dead(
    api: Api, target: RecordingTarget, stack: LocalStack
) -> None:
    # Given a callback job with two attempts whose target accepts but never heartbeats
    job = _submit(api, _callback_target(target, timeout_s=300), max_attempts=2)
    execution_id = job["execution_id"]

    # When both attempts lose their heartbeat
    first = _delivery(target, execution_id, attempt=1)
    second = _delivery(target, execution_id, attempt=2)
    execution = _execution_when(api, execution_id, {"dead", "succeeded"}, timeout_s=60)

    # Then the second attempt was a retry with a new fencing token
    assert first.headers["X-Cronwheel-Fencing-Token"] == "1"
    assert second.headers["X-Cronwheel-Fencing-Token"] == "2"
    # And the execution is dead after exactly two attempts, for the lost lease
    assert execution["state"] == "dead"
    assert execution["attempt"] == 2
    assert "lease_expired" in (execution["reason"] or "")
    assert [a["outcome"] for a in execution["attempts"]] == ["failed", "failed"]
    assert all("lease_expired" in (a["error"] or "") for a in execution["attempts"])
    # And each attempt's state machine gave up on it
    _machine_runs_when(
        stack, execution_id, {f"{execution_id}-1": "FAILED", f"{execution_id}-2": "FAILED"}
    )
    # And a late heartbeat of either attempt is refused
    for token in (1, 2):
        status, body = _heartbeat(api, execution_id, token)
        assert status == 409 and body["error"]["code"] == "conflict"


def test_long_job_runs_under_the_state_machine_and_succeeds(
    api: Api, target: RecordingTarget, stack: LocalStack
) -> None:
    # Given a job whose attempt may take an hour, longer than one dispatcher invocation holds
    job = _submit(api, _callback_target(target, timeout_s=3600, heartbeat_s=30))
    execution_id = job["execution_id"]

    # When the state machine hands it to the dispatcher, which delivers it
    call = _delivery(target, execution_id)

    # Then the attempt runs under its own state machine execution
    assert _machine_runs(stack, execution_id) == {f"{execution_id}-1": "RUNNING"}
    running = _execution(api, execution_id)
    assert running["state"] == "running" and running["attempt"] == 1
    # And the target learnt the attempt's deadline: an hour after it started
    deadline = parse_instant(call.headers["X-Cronwheel-Deadline"], field="deadline")
    started = parse_instant(running["started_at"], field="started_at")
    assert deadline - started == timedelta(seconds=3600)

    # When the target heartbeats once and completes
    token = int(call.headers["X-Cronwheel-Fencing-Token"])
    assert _heartbeat(api, execution_id, token)[0] == 200
    status, done = _complete(api, execution_id, token, status="succeeded")

    # Then the execution and its state machine execution both succeeded
    assert status == 200, done
    assert _execution(api, execution_id)["state"] == "succeeded"
    _machine_runs_when(stack, execution_id, {f"{execution_id}-1": "SUCCEEDED"})


def test_stale_or_foreign_reports_are_refused(api: Api, target: RecordingTarget) -> None:
    # Given a running callback job
    job = _submit(api, _callback_target(target, timeout_s=300, heartbeat_s=60))
    execution_id = job["execution_id"]
    token = int(_delivery(target, execution_id).headers["X-Cronwheel-Fencing-Token"])
    path = f"/v1/executions/{execution_id}"

    # When reports carry a token the attempt does not hold, then they are refused
    for status, body in (
        _heartbeat(api, execution_id, token + 1),
        _heartbeat(api, execution_id, token - 1),
        _complete(api, execution_id, token + 1, status="succeeded"),
    ):
        assert status == 409, body
        assert body["error"]["code"] == "conflict" and body["error"]["field"] == "fencing_token"
    # And another tenant cannot see it, and a viewer may not report
    assert (
        api.as_key("globex-admin-key").post(f"{path}:heartbeat", {"fencing_token": token})[0] == 404
    )
    viewer = api.as_key("acme-viewer-key")
    assert viewer.post(f"{path}:complete", {"fencing_token": token, "status": "failed"})[0] == 403
    # And nothing of that changed the execution
    assert _execution(api, execution_id)["state"] == "running"

    # When the holder of the token completes, its reports are then refused as well
    assert _complete(api, execution_id, token, status="succeeded")[0] == 200
    assert _heartbeat(api, execution_id, token)[0] == 409
    assert _complete(api, execution_id, token, status="failed")[0] == 409
    assert _execution(api, execution_id)["state"] == "succeeded"


def test_callback_target_reporting_failure_is_retried_as_a_short_job_is(
    api: Api, target: RecordingTarget, stack: LocalStack
) -> None:
    # Given a callback job with two attempts
    job = _submit(api, _callback_target(target, timeout_s=300, heartbeat_s=60), max_attempts=2)
    execution_id = job["execution_id"]

    # When the target reports failure of the first attempt
    first = _delivery(target, execution_id, attempt=1)
    token = int(first.headers["X-Cronwheel-Fencing-Token"])
    status, failed = _complete(api, execution_id, token, status="failed", error="disk full")

    # Then the attempt failed with its error and a retry is scheduled
    assert status == 200, failed
    assert failed["state"] == "retry_scheduled" and failed["reason"] == "disk full"
    # And the retry is delivered with a new fencing token, and may succeed
    second = _delivery(target, execution_id, attempt=2)
    assert second.headers["X-Cronwheel-Fencing-Token"] == str(token + 1)
    assert _complete(api, execution_id, token + 1, status="succeeded")[0] == 200
    execution = _execution(api, execution_id)
    assert execution["state"] == "succeeded"
    assert [a["outcome"] for a in execution["attempts"]] == ["failed", "succeeded"]
    _machine_runs_when(
        stack, execution_id, {f"{execution_id}-1": "FAILED", f"{execution_id}-2": "SUCCEEDED"}
    )


def test_callback_target_refusing_the_delivery_fails_the_attempt(
    api: Api, target: RecordingTarget, stack: LocalStack
) -> None:
    # Given a callback job whose target answers 500 to every delivery
    job = _submit(api, _callback_target(target, path="fail", timeout_s=300), max_attempts=2)
    execution_id = job["execution_id"]

    # When it runs
    execution = _execution_when(api, execution_id, {"dead", "succeeded"}, timeout_s=60)

    # Then each refusal is a failed attempt, and the last one ends it dead
    assert execution["state"] == "dead"
    assert [a["http_status"] for a in execution["attempts"]] == [500, 500]
    assert "HTTP 500" in (execution["reason"] or "")
    _machine_runs_when(
        stack, execution_id, {f"{execution_id}-1": "FAILED", f"{execution_id}-2": "FAILED"}
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("heartbeat_s", 0), ("heartbeat_s", 3601), ("timeout_s", 86_401)],
    ids=["heartbeat_zero", "heartbeat_over_an_hour", "timeout_over_a_day"],
)
def test_long_job_limits_are_validated(
    api: Api, target: RecordingTarget, field: str, value: int
) -> None:
    status, body = api.post("/v1/jobs", {"target": {**_callback_target(target), field: value}})
    assert status == 400, body
    assert body["error"]["field"] == f"target.{field}"
