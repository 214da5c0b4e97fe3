"""Weighted fair pacing and daily quotas, without AWS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronwheel.domain.model import (
    Execution,
    ExecutionState,
    HttpTarget,
    Priority,
    RetryPolicy,
    Trigger,
)
from cronwheel.domain.pacing import FairPacer
from cronwheel.domain.quota import (
    daily_quota_message,
    day_resets_at,
    quota_day,
    within_daily_quota,
)
from cronwheel.domain.schedule import FiringPlan

NOW = datetime(2026, 11, 30, 23, 59, 30, tzinfo=UTC)


def _starts(pacer: FairPacer, tenant: str, count: int, weight: int = 1) -> list[float]:
    return [
        (pacer.start_at(tenant, weight, Priority.NORMAL, NOW) - NOW).total_seconds()
        for _ in range(count)
    ]


def test_a_lone_tenant_gets_the_whole_rate() -> None:
    assert _starts(FairPacer(10), "a", 5) == [0.0, 0.1, 0.2, 0.3, 0.4]


def test_a_quiet_tenant_starts_at_once_beside_a_flood() -> None:
    pacer = FairPacer(10)
    flood = _starts(pacer, "a", 1000)
    assert flood[-1] > 90  # the flood is spread over about 100 s
    assert _starts(pacer, "b", 1) == [0.0]


def test_busy_tenants_share_the_rate_by_weight() -> None:
    pacer = FairPacer(10)
    _starts(pacer, "a", 1)  # both busy from here on
    _starts(pacer, "b", 1, weight=3)
    a_next = _starts(pacer, "a", 2)
    b_next = _starts(pacer, "b", 2, weight=3)
    # a's share is 10 * 1/4 per second, b's 10 * 3/4: b's spacing is a third of a's
    assert round(a_next[1] - a_next[0], 3) == 0.4
    assert round(b_next[1] - b_next[0], 3) == round(0.4 / 3, 3)


def test_high_priority_starts_now_but_pushes_the_tenants_other_work_later() -> None:
    pacer = FairPacer(10)
    _starts(pacer, "a", 10)  # a's cursor is 1 s ahead
    assert pacer.start_at("a", 1, Priority.HIGH, NOW) == NOW
    assert _starts(pacer, "a", 1) == [1.1]


def test_a_tenant_idle_again_is_forgotten() -> None:
    pacer = FairPacer(10)
    _starts(pacer, "a", 10)
    later = NOW + timedelta(seconds=5)
    assert pacer.start_at("a", 1, Priority.NORMAL, later) == later


def test_the_daily_quota_counts_utc_days_and_says_when_it_resets() -> None:
    assert quota_day(NOW) == "2026-11-30"
    assert quota_day(NOW + timedelta(seconds=31)) == "2026-12-01"
    assert day_resets_at(NOW) == datetime(2026, 12, 1, tzinfo=UTC)
    message = daily_quota_message(500, NOW)
    assert "max_executions_per_day (500)" in message
    assert "resets at 2026-12-01T00:00:00Z" in message


def test_occurrences_beyond_the_room_left_are_recorded_skipped() -> None:
    plans = [
        FiringPlan([_queued("e1"), _queued("e2")], None),
        FiringPlan([_queued("e3")], None),
    ]
    assert within_daily_quota(plans, 1, "quota_exceeded: full", NOW) == 1
    states = [(e.id, e.state, e.reason) for p in plans for e in p.executions]
    assert states == [
        ("e1", ExecutionState.QUEUED, None),
        ("e2", ExecutionState.SKIPPED, "quota_exceeded: full"),
        ("e3", ExecutionState.SKIPPED, "quota_exceeded: full"),
    ]


def _queued(execution_id: str) -> Execution:
    return Execution(
        id=execution_id,
        tenant="acme",
        schedule_id="sch_1",
        scheduled_for=NOW,
        due_at=NOW,
        trigger=Trigger.SCHEDULE,
        target=HttpTarget(url="http://t/x"),
        payload={},
        retry=RetryPolicy(),
        priority=Priority.NORMAL,
        created_at=NOW,
        state=ExecutionState.QUEUED,
    )
