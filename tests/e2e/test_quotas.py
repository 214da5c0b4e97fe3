"""Quotas: executions per UTC day and schedules, answered 429 with which quota and when it frees."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.api import Api
from tests.support.target import RecordingTarget, wait_for


@pytest.fixture(scope="module")
def admin(api: Api) -> Api:
    return api.as_key("quotaco-admin-key")


def _job(target: RecordingTarget) -> dict[str, object]:
    return {"target": {"type": "http", "url": f"{target.base_url}/ok"}}


def _tomorrow_utc() -> str:
    return (datetime.now(UTC) + timedelta(days=1)).date().isoformat() + "T00:00:00Z"


def test_daily_execution_quota_refuses_jobs_triggers_and_scheduled_runs(
    admin: Api, target: RecordingTarget
) -> None:
    # Given a tenant allowed 3 executions a day
    status, tenant = admin.call("PATCH", "/v1/tenant/limits", {"max_executions_per_day": 3})
    assert status == 200 and tenant["limits"]["max_executions_per_day"] == 3
    schedule_status, schedule = admin.post(
        "/v1/schedules",
        {"name": "quota-minutely", "cron": "*/5 * * * *", "target": _job(target)["target"]},
    )
    assert schedule_status == 201

    # When it submits 3 jobs, then a 4th
    accepted = [admin.post("/v1/jobs", _job(target)) for _ in range(3)]
    status, refused = admin.post("/v1/jobs", _job(target))

    # Then the first 3 are accepted and the 4th is refused with which quota and when it resets
    assert [s for s, _ in accepted] == [201, 201, 201]
    assert status == 429 and refused["error"]["code"] == "resource_exhausted"
    assert "max_executions_per_day (3)" in refused["error"]["message"]
    assert f"resets at {_tomorrow_utc()}" in refused["error"]["message"]
    # And a manual trigger is refused the same way, losing nothing already accepted
    status, refused = admin.post(f"/v1/schedules/{schedule['id']}:trigger")
    assert status == 429 and "max_executions_per_day" in refused["error"]["message"]
    for _, job in accepted:
        wait_for(lambda job=job: target.calls_for(job["execution_id"]), timeout_s=30)
    # And usage shows the quota's count
    assert admin.get("/v1/tenant")[1]["usage"]["executions_today"] == 3

    # When the limit is raised, work is accepted again
    admin.call("PATCH", "/v1/tenant/limits", {"max_executions_per_day": 4})
    assert admin.post("/v1/jobs", _job(target))[0] == 201


def test_scheduled_runs_over_the_daily_quota_are_recorded_skipped_with_the_reason(
    admin: Api, target: RecordingTarget
) -> None:
    # Given a tenant whose daily quota is used up, and a schedule due every 5 seconds
    admin.call("PATCH", "/v1/tenant/limits", {"max_executions_per_day": 1})
    status, schedule = admin.post(
        "/v1/schedules",
        {"name": "quota-every-5s", "rate": "5 seconds", "target": _job(target)["target"]},
    )
    assert status == 201

    # When its occurrences come due
    def skipped() -> list[dict[str, object]]:
        _, page = admin.get(f"/v1/executions?schedule_id={schedule['id']}&status=skipped")
        return list(page["items"])

    records = wait_for(skipped, timeout_s=30, interval_s=0.5)

    # Then each is on record as skipped, saying which quota and when it resets; none ran
    assert str(records[0]["reason"]).startswith("quota_exceeded: quota max_executions_per_day (1)")
    assert _tomorrow_utc() in str(records[0]["reason"])
    assert not [c for c in list(target.calls) if c.document.get("schedule_id") == schedule["id"]]
    admin.call("DELETE", f"/v1/schedules/{schedule['id']}")


def test_schedule_quota_refuses_one_schedule_too_many(admin: Api, target: RecordingTarget) -> None:
    _, tenant = admin.get("/v1/tenant")
    existing = tenant["usage"]["schedules"]
    admin.call("PATCH", "/v1/tenant/limits", {"max_schedules": existing + 1})
    body = {"rate": "1 hour", "target": _job(target)["target"]}

    assert admin.post("/v1/schedules", {**body, "name": "quota-last-place"})[0] == 201
    status, refused = admin.post("/v1/schedules", {**body, "name": "quota-one-too-many"})

    assert status == 429 and refused["error"]["code"] == "resource_exhausted"
    assert f"max_schedules ({existing + 1})" in refused["error"]["message"]
    assert admin.get("/v1/schedules?name_prefix=quota-one-too-many")[1]["items"] == []
