"""Recurring schedules on the local stack: rate firing, pause/resume, manual trigger, policies."""

from __future__ import annotations

import time
from typing import Any

from tests.support.api import Api
from tests.support.target import RecordingTarget, wait_for


def _executions(api: Api, schedule_id: str) -> list[dict[str, Any]]:
    status, page = api.get(f"/v1/executions?schedule_id={schedule_id}&limit=500")
    assert status == 200, page
    items: list[dict[str, Any]] = page["items"]
    return items


def _create(api: Api, target: RecordingTarget, name: str, **fields: Any) -> dict[str, Any]:
    body = {"name": name, "target": {"type": "http", "url": f"{target.base_url}/ok"}, **fields}
    status, schedule = api.post("/v1/schedules", body)
    assert status == 201, schedule
    return schedule


def test_rate_schedule_fires_pauses_resumes_and_triggers(api: Api, target: RecordingTarget) -> None:
    # Given a schedule every 5 seconds
    schedule = _create(api, target, "every-5s", rate="5 seconds")
    sid = schedule["id"]

    # When it has fired twice
    fired = wait_for(
        lambda: (
            [e for e in _executions(api, sid) if e["state"] == "succeeded"][:2]
            if len([e for e in _executions(api, sid) if e["state"] == "succeeded"]) >= 2
            else None
        ),
        timeout_s=20,
    )

    # Then the two runs are 5 s apart with distinct execution ids
    assert fired[0]["id"] != fired[1]["id"]
    times = sorted(e["scheduled_for"] for e in fired)
    assert all(e["trigger"] == "schedule" for e in fired)
    assert times[0] != times[1]

    # When paused, nothing runs while paused
    status, paused = api.post(f"/v1/schedules/{sid}:pause")
    assert status == 200 and paused["paused"] is True and paused["next_run_at"] is None
    before = {e["id"]: e for e in _executions(api, sid)}
    pending = [i for i, e in before.items() if e["state"] == "queued"]

    def settled(execution_id: str) -> bool:
        return bool(api.get(f"/v1/executions/{execution_id}")[1]["state"] != "queued")

    # (runs queued within the lookahead before the pause reach their due time meanwhile)
    for execution_id in pending:
        wait_for(lambda execution_id=execution_id: settled(execution_id), timeout_s=20)
    time.sleep(1)
    after = {e["id"]: e for e in _executions(api, sid)}
    # No execution is created while paused, and those already queued end skipped, not run
    assert set(after) == set(before)
    for execution_id in pending:
        assert (after[execution_id]["state"], after[execution_id]["reason"]) == (
            "skipped",
            "paused",
        )

    # When resumed it fires again
    status, resumed = api.post(f"/v1/schedules/{sid}:resume")
    assert status == 200 and resumed["paused"] is False and resumed["next_run_at"]
    wait_for(
        lambda: len([e for e in _executions(api, sid) if e["state"] == "succeeded"]) > len(before),
        timeout_s=20,
    )

    # And a manual trigger runs once now, trigger manual, audited
    status, manual = api.post(f"/v1/schedules/{sid}:trigger")
    assert status == 202 and manual["trigger"] == "manual"
    wait_for(lambda: api.get(f"/v1/executions/{manual['id']}")[1]["state"] == "succeeded")
    status, audit = api.as_key("acme-admin-key").get("/v1/audit")
    assert status == 200
    actions = [(r["action"], r["target_id"]) for r in audit["items"]]
    assert ("trigger", sid) in actions and ("pause", sid) in actions and ("resume", sid) in actions
    api.call("DELETE", f"/v1/schedules/{sid}")


def test_schedule_crud_and_validation(api: Api, target: RecordingTarget) -> None:
    schedule = _create(api, target, "nightly", cron="30 2 * * *", timezone="Europe/Amsterdam")
    sid = schedule["id"]
    assert schedule["version"] == 1 and schedule["next_run_at"]

    # Name unique per tenant
    status, error = api.post(
        "/v1/schedules",
        {
            "name": "nightly",
            "cron": "0 * * * *",
            "target": {"type": "http", "url": f"{target.base_url}/ok"},
        },
    )
    assert status == 409 and error["error"]["code"] == "already_exists"

    # next-runs in local time
    status, runs = api.get(f"/v1/schedules/{sid}/next-runs?count=3")
    assert status == 200 and len(runs["items"]) == 3
    assert all(r["local_time"].endswith(("+01:00", "+02:00")) for r in runs["items"])

    # PATCH with a stale If-Match is 412; with the right one it applies
    status, error = api.call(
        "PATCH", f"/v1/schedules/{sid}", {"description": "x"}, headers={"If-Match": "7"}
    )
    assert status == 412
    status, patched = api.call(
        "PATCH", f"/v1/schedules/{sid}", {"description": "x"}, headers={"If-Match": "1"}
    )
    assert status == 200 and patched["version"] == 2 and patched["description"] == "x"

    # Invalid cron, rate, timezone name the field
    for body, field in (
        ({"cron": "61 * * * *"}, "cron"),
        ({"rate": "1 second"}, "rate"),
        ({"cron": "0 * * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"cron": "0 * * * *", "misfire": "later"}, "misfire"),
        (
            {
                "cron": "0 * * * *",
                "start_at": "2026-01-02T00:00:00Z",
                "end_at": "2026-01-01T00:00:00Z",
            },
            "end_at",
        ),
        ({"cron": "0 * * * *", "start_at": "soon"}, "start_at"),
        ({}, "cron"),
    ):
        status, error = api.post(
            "/v1/schedules", {"name": "bad", "target": {"type": "http", "url": "http://x/"}, **body}
        )
        assert status == 400, (body, error)
        assert error["error"]["field"] == field, (body, error)

    # Preview shows UTC and local times for Amsterdam's spring-forward gap
    status, preview = api.post(
        "/v1/cron:preview",
        {
            "cron": "30 2 * * *",
            "timezone": "Europe/Amsterdam",
            "count": 1,
            "after": "2026-03-28T12:00:00Z",
        },
    )
    assert status == 200
    assert preview["items"] == [
        {"scheduled_for": "2026-03-29T01:00:00Z", "local_time": "2026-03-29T03:00:00+02:00"}
    ]

    # Delete: 204, then 404
    assert api.call("DELETE", f"/v1/schedules/{sid}")[0] == 204
    assert api.get(f"/v1/schedules/{sid}")[0] == 404


def test_overlap_forbid_skips_while_the_previous_run_is_still_running(
    api: Api, target: RecordingTarget
) -> None:
    # Given a 5 s schedule whose target takes 7 s
    status, schedule = api.post(
        "/v1/schedules",
        {
            "name": "slow-forbid",
            "rate": "5 seconds",
            "concurrency": "forbid",
            "target": {"type": "http", "url": f"{target.base_url}/slow/7", "timeout_s": 20},
        },
    )
    assert status == 201
    sid = schedule["id"]
    # Then an occurrence during the run is skipped with reason overlap
    skipped = wait_for(
        lambda: [e for e in _executions(api, sid) if e["state"] == "skipped"], timeout_s=25
    )
    assert skipped[0]["reason"].startswith("overlap")
    api.call("DELETE", f"/v1/schedules/{sid}")


def test_overlap_replace_cancels_the_older_run(api: Api, target: RecordingTarget) -> None:
    status, schedule = api.post(
        "/v1/schedules",
        {
            "name": "slow-replace",
            "rate": "5 seconds",
            "concurrency": "replace",
            "target": {"type": "http", "url": f"{target.base_url}/slow/7", "timeout_s": 20},
        },
    )
    assert status == 201
    sid = schedule["id"]
    cancelled = wait_for(
        lambda: [e for e in _executions(api, sid) if e["state"] == "cancelled"], timeout_s=25
    )
    assert cancelled[0]["reason"].startswith("replaced by")
    # And the older run's late result does not change it
    time.sleep(3)
    status, again = api.get(f"/v1/executions/{cancelled[0]['id']}")
    assert again["state"] == "cancelled"
    api.call("DELETE", f"/v1/schedules/{sid}")


def test_dependency_runs_after_upstream_succeeds_not_after_it_fails(
    api: Api, target: RecordingTarget
) -> None:
    # Given an upstream that succeeds and one that fails, each with a dependent
    ok_up = _create(api, target, "up-ok", rate="5 seconds")
    fail_up = api.post(
        "/v1/schedules",
        {
            "name": "up-fail",
            "rate": "5 seconds",
            "retry": {"max_attempts": 1},
            "target": {"type": "http", "url": f"{target.base_url}/fail"},
        },
    )[1]
    ok_down = _create(api, target, "down-ok", after=ok_up["id"])
    fail_down = _create(api, target, "down-fail", after=fail_up["id"])

    # When the upstreams have run
    runs = wait_for(
        lambda: [e for e in _executions(api, ok_down["id"]) if e["state"] == "succeeded"],
        timeout_s=20,
    )
    wait_for(
        lambda: [e for e in _executions(api, fail_up["id"]) if e["state"] == "dead"], timeout_s=20
    )

    # Then the dependent of the successful one ran, trigger dependency, for the upstream occurrence
    upstream_times = {e["scheduled_for"] for e in _executions(api, ok_up["id"])}
    assert runs[0]["trigger"] == "dependency" and runs[0]["scheduled_for"] in upstream_times
    # And the dependent of the failing one never ran
    assert _executions(api, fail_down["id"]) == []

    # And a cycle is refused
    status, error = api.call("PATCH", f"/v1/schedules/{ok_up['id']}", {"after": ok_down["id"]})
    assert status == 400 and error["error"]["field"] == "after"
    for s in (ok_down, fail_down, ok_up, fail_up):
        api.call("DELETE", f"/v1/schedules/{s['id']}")


def test_hashed_schedule_keeps_its_slot_across_reads_and_updates(
    api: Api, target: RecordingTarget
) -> None:
    # Given a Jenkins-hashed daily schedule
    schedule = _create(api, target, "hashed-daily", cron="H H * * *")
    sid = schedule["id"]
    runs = api.get(f"/v1/schedules/{sid}/next-runs?count=3")[1]["items"]

    # When it is read again and another field is updated
    assert api.get(f"/v1/schedules/{sid}/next-runs?count=3")[1]["items"] == runs
    status, _ = api.call("PATCH", f"/v1/schedules/{sid}", {"description": "nightly export"})
    assert status == 200

    # Then its slot is the same, and a second schedule lands elsewhere
    assert api.get(f"/v1/schedules/{sid}/next-runs?count=3")[1]["items"] == runs
    others = {
        api.get(
            f"/v1/schedules/{_create(api, target, f'hashed-{n}', cron='H H * * *')['id']}/next-runs?count=1"
        )[1]["items"][0]["scheduled_for"][11:16]
        for n in range(5)
    }
    assert len(others | {runs[0]["scheduled_for"][11:16]}) >= 4


def test_changing_the_expression_supersedes_runs_already_queued(
    api: Api, target: RecordingTarget
) -> None:
    # Given a schedule with an occurrence already queued within the lookahead
    schedule = _create(api, target, "to-retime", rate="8 seconds")
    sid = schedule["id"]
    queued = wait_for(
        lambda: [e for e in _executions(api, sid) if e["state"] == "queued"], timeout_s=10
    )

    # When its rate changes
    status, patched = api.call("PATCH", f"/v1/schedules/{sid}", {"rate": "9 seconds"})
    assert status == 200 and patched["version"] == 2

    # Then the run queued for the old times is skipped as superseded, not run
    def superseded() -> dict[str, Any] | None:
        _, execution = api.get(f"/v1/executions/{queued[0]['id']}")
        return execution if execution["state"] in ("skipped", "succeeded") else None

    ended = wait_for(superseded, timeout_s=15)
    assert (ended["state"], ended["reason"]) == ("skipped", "superseded")
    api.call("DELETE", f"/v1/schedules/{sid}")
