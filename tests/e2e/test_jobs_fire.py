"""A one-off job through the whole local stack: API -> SQS delay -> dispatch -> target."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from cronwheel.domain.instants import format_instant, parse_instant
from cronwheel.domain.signing import verify
from tests.e2e.conftest import ACME_SECRET
from tests.support.api import Api
from tests.support.target import RecordingTarget, wait_for


def _execution_when(api: Api, execution_id: str, states: set[str]) -> dict[str, Any]:
    def settled() -> dict[str, Any] | None:
        status, doc = api.get(f"/v1/executions/{execution_id}")
        return doc if status == 200 and doc["state"] in states else None

    result: dict[str, Any] = wait_for(settled, timeout_s=30)
    return result


def test_job_at_run_at_is_called_once_on_time_with_signed_contract(
    api: Api, target: RecordingTarget
) -> None:
    # Given a job due three seconds from now with an HTTP target on 127.0.0.1
    run_at = datetime.now(UTC) + timedelta(seconds=3)
    status, job = api.post(
        "/v1/jobs",
        {
            "run_at": format_instant(run_at),
            "target": {"type": "http", "url": f"{target.base_url}/ok", "headers": {"X-Team": "a"}},
            "payload": {"report": "daily"},
        },
    )
    assert status == 201, job

    # When it fires
    execution = _execution_when(api, job["execution_id"], {"succeeded", "dead"})

    # Then the target was called exactly once, never before run_at and within 1 s of it
    calls = target.calls_for(job["execution_id"])
    assert len(calls) == 1
    call = calls[0]
    lag_s = call.received_at - parse_instant(job["run_at"], field="run_at").timestamp()
    assert 0 <= lag_s <= 1.0, f"fire lag {lag_s:.3f} s"
    # And with the body and headers of API.md
    assert call.document == {
        "execution_id": job["execution_id"],
        "tenant": "acme",
        "job_id": job["id"],
        "scheduled_for": job["run_at"],
        "attempt": 1,
        "fencing_token": 1,
        "payload": {"report": "daily"},
    }
    headers = call.headers
    assert headers["Idempotency-Key"] == job["execution_id"]
    assert headers["X-Cronwheel-Execution-Id"] == job["execution_id"]
    assert headers["X-Cronwheel-Attempt"] == "1"
    assert headers["X-Cronwheel-Fencing-Token"] == "1"
    assert headers["X-Cronwheel-Scheduled-For"] == job["run_at"]
    assert headers["X-Team"] == "a"
    # And a signature that verifies under the tenant's secret
    assert verify(
        [ACME_SECRET], headers["X-Cronwheel-Timestamp"], call.body, headers["X-Cronwheel-Signature"]
    )
    assert not verify(
        ["another-secret"],
        headers["X-Cronwheel-Timestamp"],
        call.body,
        headers["X-Cronwheel-Signature"],
    )
    # And the execution reads succeeded with one attempt
    assert execution["state"] == "succeeded"
    assert [a["attempt"] for a in execution["attempts"]] == [1]
    assert execution["attempts"][0]["http_status"] == 200


def test_flaky_target_succeeds_on_third_attempt_with_each_attempt_recorded(
    api: Api, target: RecordingTarget
) -> None:
    # Given a target that fails twice and then answers 200
    status, job = api.post(
        "/v1/jobs",
        {
            "target": {"type": "http", "url": f"{target.base_url}/flaky/2"},
            "retry": {"max_attempts": 5, "initial_s": 1, "backoff": "fixed"},
        },
    )
    assert status == 201, job

    # When the job runs to its end
    execution = _execution_when(api, job["execution_id"], {"succeeded", "dead"})

    # Then it succeeded after three attempts, each recorded with its HTTP status
    assert execution["state"] == "succeeded"
    assert [(a["attempt"], a["http_status"], a["outcome"]) for a in execution["attempts"]] == [
        (1, 500, "failed"),
        (2, 500, "failed"),
        (3, 200, "succeeded"),
    ]
    # And the target saw one fencing token per attempt and the same execution id each time
    calls = target.calls_for(job["execution_id"])
    assert [c.headers["X-Cronwheel-Fencing-Token"] for c in calls] == ["1", "2", "3"]
    # And every retry waited at least its backoff
    starts = [parse_instant(a["started_at"], field="") for a in execution["attempts"]]
    assert all(later - earlier >= timedelta(seconds=0.5) for earlier, later in pairwise(starts))


def test_always_failing_target_ends_dead_with_both_attempts(
    api: Api, target: RecordingTarget
) -> None:
    # Given a target that always fails and max_attempts 2
    status, job = api.post(
        "/v1/jobs",
        {
            "target": {"type": "http", "url": f"{target.base_url}/fail"},
            "retry": {"max_attempts": 2, "initial_s": 1},
        },
    )
    assert status == 201, job

    # When the job runs out of attempts
    execution = _execution_when(api, job["execution_id"], {"dead"})

    # Then it is dead, with the reason and both attempts
    assert execution["reason"].startswith("max_attempts_exhausted")
    assert [(a["attempt"], a["http_status"]) for a in execution["attempts"]] == [(1, 500), (2, 500)]
    assert len(target.calls_for(job["execution_id"])) == 2


def test_idempotency_key_gives_one_job_and_one_run(api: Api, target: RecordingTarget) -> None:
    # Given a job request with an idempotency key
    body = {
        "idempotency_key": "nightly-2026-11-30",
        "delay_s": 1,
        "target": {"type": "http", "url": f"{target.base_url}/ok"},
        "payload": {"n": 1},
    }

    # When it is sent twice
    first_status, first = api.post("/v1/jobs", body)
    second_status, second = api.post("/v1/jobs", body)

    # Then the second answer is 200 with the original job
    assert (first_status, second_status) == (201, 200)
    assert second["id"] == first["id"]
    assert second["execution_id"] == first["execution_id"]
    _execution_when(api, first["execution_id"], {"succeeded"})
    assert len(target.calls_for(first["execution_id"])) == 1
    status, listed = api.get(f"/v1/executions?job_id={first['id']}")
    assert status == 200 and len(listed["items"]) == 1

    # And the same key with another body is a conflict
    status, error = api.post("/v1/jobs", {**body, "payload": {"n": 2}})
    assert status == 409
    assert error["error"]["code"] == "conflict"
    assert error["error"]["field"] == "idempotency_key"


def test_a_job_beyond_the_lookahead_waits_for_the_tick(api: Api, target: RecordingTarget) -> None:
    # Given a job due after the API's lookahead (10 s on the local stack)
    status, job = api.post(
        "/v1/jobs", {"delay_s": 12, "target": {"type": "http", "url": f"{target.base_url}/ok"}}
    )
    assert status == 201 and job["state"] == "scheduled"

    # When the tick reaches it, it is queued and then run
    execution = _execution_when(api, job["execution_id"], {"succeeded"})

    # Then it ran once, not before its time
    calls = target.calls_for(job["execution_id"])
    assert len(calls) == 1
    assert calls[0].received_at >= parse_instant(job["run_at"], field="").timestamp()
    assert execution["attempt"] == 1


def test_cancel_stops_a_waiting_job_and_ignores_a_running_ones_result(
    api: Api, target: RecordingTarget
) -> None:
    # Given a job an hour out and a job whose target takes 3 s
    status, later = api.post(
        "/v1/jobs", {"delay_s": 3600, "target": {"type": "http", "url": f"{target.base_url}/ok"}}
    )
    assert status == 201
    status, slow = api.post(
        "/v1/jobs", {"target": {"type": "http", "url": f"{target.base_url}/slow/3"}}
    )
    assert status == 201

    # When both are cancelled (the slow one while its call is in flight)
    status, cancelled = api.post(f"/v1/executions/{later['execution_id']}:cancel")
    assert status == 200 and cancelled["state"] == "cancelled"
    wait_for(lambda: target.calls_for(slow["execution_id"]))
    status, cancelled_running = api.post(f"/v1/executions/{slow['execution_id']}:cancel")
    assert status == 200 and cancelled_running["state"] == "cancelled"

    # Then the running one stays cancelled after its target answers, and cancelling again is 412
    time.sleep(3.5)
    assert api.get(f"/v1/executions/{slow['execution_id']}")[1]["state"] == "cancelled"
    assert api.post(f"/v1/executions/{slow['execution_id']}:cancel")[0] == 412
    # And a viewer may not cancel
    assert (
        api.as_key("acme-viewer-key").post(f"/v1/executions/{later['execution_id']}:cancel")[0]
        == 403
    )
