"""A target's `rate_limit_per_s` holds across all dispatchers; work over it waits, none is lost."""

from __future__ import annotations

import uuid

from tests.support.api import Api
from tests.support.target import RecordingTarget, wait_for

JOBS = 50
RATE = 5
# The limit spaces the starts of calls; the target sees each a little later, after the claim
# write and the HTTP request. Allow each call this much of that delay, no more.
JITTER_S = 0.25


def test_fifty_jobs_due_at_once_reach_a_target_limited_to_5_per_second_at_that_rate(
    api: Api, target: RecordingTarget
) -> None:
    path = f"/rated/{uuid.uuid4().hex}"
    url = target.base_url + path
    body = {"target": {"type": "http", "url": url, "rate_limit_per_s": RATE}}

    # When 50 jobs due now all call the same rate-limited target
    answers = [api.post("/v1/jobs", body) for _ in range(JOBS)]
    assert {status for status, _ in answers} == {201}
    assert answers[0][1]["target"]["rate_limit_per_s"] == RATE

    # Then every one is called, once
    def calls() -> list[float]:
        return sorted(c.received_at for c in list(target.calls) if c.path == path)

    wait_for(lambda: len(calls()) >= JOBS, timeout_s=120, interval_s=0.5)
    times = calls()
    assert len(times) == JOBS
    # And no 1-second window saw more than 5 of them
    for first, sixth in zip(times, times[RATE:], strict=False):
        assert sixth - first >= 1.0 - JITTER_S, f"6 calls within {sixth - first:.3f} s"
    # And each execution succeeded with its first attempt: waiting used no attempt
    for _, job in answers:
        execution = wait_for(
            lambda job=job: _finished(api, job["execution_id"]), timeout_s=30, interval_s=0.2
        )
        assert (execution["state"], execution["attempt"]) == ("succeeded", 1)


def _finished(api: Api, execution_id: str) -> dict[str, object] | None:
    _, execution = api.get(f"/v1/executions/{execution_id}")
    return execution if execution["state"] == "succeeded" else None


def test_a_rate_limit_must_be_positive(api: Api, target: RecordingTarget) -> None:
    for bad in (0, -1, "5"):
        body = {"target": {"type": "http", "url": target.base_url, "rate_limit_per_s": bad}}
        status, error = api.post("/v1/jobs", body)
        assert status == 400 and error["error"]["code"] == "invalid_argument"
