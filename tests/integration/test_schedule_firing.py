"""The tick fires schedules under its lease; misfire policies; pausing wins over a late tick."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from cronwheel.clock import ManualClock
from cronwheel.domain.model import ExecutionState, HttpTarget, Misfire, Trigger
from cronwheel.runtime import Runtime
from cronwheel.services.schedules import ScheduleService
from cronwheel.services.tick import Tick
from cronwheel.store.store import ExecutionQuery
from tests.integration.conftest import ACME


@pytest.fixture
def no_send(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []
    monkeypatch.setattr(
        rt.queue, "send", lambda messages, now: sent.extend(m.execution_id for m in messages) or []
    )
    return sent


def _schedule(rt: Runtime, clock: ManualClock, **fields: Any) -> str:
    service = ScheduleService(rt.store, rt.queue, rt.settings)
    schedule = service.create(
        ACME,
        {"name": fields.pop("name", "s"), "target": HttpTarget(url="http://t/x"), **fields},
        clock.now(),
    )
    return schedule.id


def _tick_all(rt: Runtime, clock: ManualClock) -> None:
    for shard in range(rt.settings.shards):
        Tick(rt.store, rt.queue, rt.settings, shard, owner=f"t{clock.now().timestamp()}").run(
            clock.now()
        )


def _executions(rt: Runtime, schedule_id: str) -> list[Any]:
    page = rt.store.list_executions(
        ExecutionQuery(tenant="acme", schedule_id=schedule_id, limit=500)
    )
    return sorted(page.items, key=lambda e: e.scheduled_for)


def test_pause_between_a_ticks_read_and_write_fires_nothing(
    rt: Runtime, clock: ManualClock, no_send: list[str]
) -> None:
    # Given a schedule due in two minutes, beyond the lookahead
    sid = _schedule(rt, clock, rate="2 minutes")
    clock.advance(90)
    shard_items = []
    ticks = []
    for shard in range(rt.settings.shards):
        tick = Tick(rt.store, rt.queue, rt.settings, shard, owner="t")
        tick.acquire(clock.now())
        shard_items.append(tick.collect(clock.now()))
        ticks.append(tick)
    assert any(items for items in shard_items)

    # When it is paused after the tick read it, and the tick then writes
    ScheduleService(rt.store, rt.queue, rt.settings).set_paused(ACME, sid, True, clock.now())
    for tick, items in zip(ticks, shard_items, strict=True):
        tick.fire(items, clock.now())

    # Then nothing was fired
    assert _executions(rt, sid) == []


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(Misfire.SKIP, ["skipped", "skipped", "skipped"], id="skip_records_each_miss"),
        pytest.param(
            Misfire.RUN_ONCE, ["skipped", "skipped", "queued"], id="run_once_fires_the_latest"
        ),
        pytest.param(
            Misfire.CATCH_UP, ["queued", "queued", "queued"], id="catch_up_fires_all_within_limit"
        ),
    ],
)
def test_misfire_after_the_tick_was_down_for_three_occurrences(
    rt: Runtime, clock: ManualClock, no_send: list[str], policy: Misfire, expected: list[str]
) -> None:
    # Given a schedule every 2 minutes with a 30 s misfire grace, and no tick for ~7 minutes
    sid = _schedule(rt, clock, rate="2 minutes", misfire=policy, misfire_grace_s=30)
    clock.advance(7 * 60 - 10)

    # When the tick comes back
    _tick_all(rt, clock)

    # Then the three missed occurrences are handled per policy, oldest first
    executions = _executions(rt, sid)
    assert [e.state.value for e in executions] == expected
    skipped = [e for e in executions if e.state is ExecutionState.SKIPPED]
    assert all(e.reason == "misfire" for e in skipped)
    fired = [e for e in executions if e.state is ExecutionState.QUEUED]
    if policy is Misfire.CATCH_UP:
        assert {e.trigger for e in fired} == {Trigger.CATCH_UP}
    assert len({e.id for e in executions}) == len(executions)
    # And the schedule is not wedged: the next occurrence is in the future
    schedule = rt.store.get_schedule(sid)
    assert schedule is not None and schedule.next_occurrence is not None
    assert schedule.next_occurrence > clock.now()


def test_catch_up_is_bounded_by_its_limit(
    rt: Runtime, clock: ManualClock, no_send: list[str]
) -> None:
    sid = _schedule(
        rt, clock, rate="1 minute", misfire=Misfire.CATCH_UP, catch_up_limit=2, misfire_grace_s=5
    )
    clock.advance(10 * 60 + 30)
    _tick_all(rt, clock)
    executions = _executions(rt, sid)
    caught_up = [e for e in executions if e.trigger is Trigger.CATCH_UP]
    skipped = [e for e in executions if e.state is ExecutionState.SKIPPED]
    # The latest two missed occurrences run, the earlier missed ones are recorded skipped
    assert len(caught_up) == 2 and len(skipped) == 7
    assert max(s.scheduled_for for s in skipped) < min(c.scheduled_for for c in caught_up)


def test_a_long_outage_does_not_wedge_the_schedule(
    rt: Runtime, clock: ManualClock, no_send: list[str]
) -> None:
    sid = _schedule(rt, clock, rate="5 seconds", misfire=Misfire.RUN_ONCE)
    clock.advance(3 * 86400)
    _tick_all(rt, clock)
    schedule = rt.store.get_schedule(sid)
    assert schedule is not None and schedule.next_occurrence is not None
    lookahead = timedelta(seconds=rt.settings.lookahead_s)
    assert (
        clock.now() + lookahead
        < schedule.next_occurrence
        <= clock.now() + lookahead + timedelta(seconds=5)
    )
    executions = _executions(rt, sid)
    # (the first minute was fired at creation, within the lookahead; look at this tick's work)
    late = [
        e
        for e in executions
        if e.created_at == clock.now() and e.scheduled_for < clock.now() - timedelta(seconds=60)
    ]
    assert [e.state.value for e in late].count("queued") == 1
    skipped = [e for e in executions if e.state is ExecutionState.SKIPPED]
    assert "not recorded one by one" in (skipped[0].reason or "")
