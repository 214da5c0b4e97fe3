"""Shard leases fence the tick: a tick paused past its lease writes nothing after a takeover."""

from __future__ import annotations

import json
from datetime import timedelta

import boto3
import pytest

from cronwheel.clock import ManualClock
from cronwheel.domain.model import ExecutionState, HttpTarget, Priority, RetryPolicy
from cronwheel.runtime import Runtime
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel.services.tick import Tick
from cronwheel.store.store import ExecutionQuery, LeaseLost
from tests.integration.conftest import ACME, T0


def _submit_far_jobs(rt: Runtime, count: int, due_in_s: int) -> list[str]:
    service = JobService(rt.store, rt.queue, rt.settings)
    ids = []
    for _ in range(count):
        submitted = service.submit(
            ACME,
            JobRequest(
                target=HttpTarget(url="http://127.0.0.1:9/x"),
                payload={},
                retry=RetryPolicy(),
                priority=Priority.NORMAL,
                delay_s=due_in_s,
            ),
            T0,
        )
        assert submitted.execution.state is ExecutionState.SCHEDULED
        ids.append(submitted.execution.id)
    return ids


def _dispatch_messages(rt: Runtime) -> list[dict[str, object]]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    # Make delayed messages visible by reading them with a wide-open visibility window.
    bodies = []
    for _ in range(50):
        got = sqs.receive_message(
            QueueUrl=rt.settings.dispatch_queue_url, MaxNumberOfMessages=10, VisibilityTimeout=600
        ).get("Messages", [])
        if not got:
            break
        bodies += [json.loads(m["Body"]) for m in got]
    return bodies


@pytest.fixture
def no_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    # moto holds delayed messages in real time; these tests read what was sent, not when.
    monkeypatch.setattr("cronwheel.dispatch_queue.delay_for", lambda due_at, now: 0)


def test_paused_tick_writes_nothing_after_takeover(
    rt: Runtime, clock: ManualClock, no_delay: None
) -> None:
    # Given 30 jobs due in two minutes, spread over the shards
    execution_ids = _submit_far_jobs(rt, 30, due_in_s=120)
    now = clock.advance(90)  # within the 60 s lookahead of their due time

    for shard in range(rt.settings.shards):
        # And tick A holding the shard lease, with its due items read, then paused
        tick_a = Tick(rt.store, rt.queue, rt.settings, shard, owner="tick-a")
        lease_a = tick_a.acquire(now)
        assert lease_a is not None
        items_a = tick_a.collect(now)

        # When tick B finds the lease expired, takes it over (epoch + 1) and fires the shard
        later = now + timedelta(seconds=rt.settings.shard_lease_s + 1)
        tick_b = Tick(rt.store, rt.queue, rt.settings, shard, owner="tick-b")
        report_b = tick_b.run(later)
        assert report_b.epoch == lease_a.epoch + 1
        assert report_b.took_over
        assert {i.id for i in report_b.fired} == {i.id for i in items_a}

        # Then paused tick A's writes are rejected: it learns it lost the lease
        with pytest.raises(LeaseLost):
            tick_a.fire(items_a, later)

    # And each due job has exactly one execution, queued once, and one message was sent for each
    page = rt.store.list_executions(ExecutionQuery(tenant="acme", limit=500))
    assert sorted(e.id for e in page.items) == sorted(execution_ids)
    assert {e.state for e in page.items} == {ExecutionState.QUEUED}
    messages = _dispatch_messages(rt)
    assert sorted(m["execution_id"] for m in messages) == sorted(execution_ids)


def test_a_live_lease_keeps_a_second_tick_out(rt: Runtime, clock: ManualClock) -> None:
    # Given tick A holds shard 0
    tick_a = Tick(rt.store, rt.queue, rt.settings, 0, owner="tick-a")
    assert tick_a.acquire(clock.now()) is not None

    # When tick B tries before the lease expires
    report = Tick(rt.store, rt.queue, rt.settings, 0, owner="tick-b").run(clock.advance(1))

    # Then B does nothing
    assert report.lease_busy and report.fired == []


def test_two_ticks_in_turn_fire_each_job_once(
    rt: Runtime, clock: ManualClock, no_delay: None
) -> None:
    # Given jobs due soon, and ticks of two owners running one after the other
    execution_ids = _submit_far_jobs(rt, 12, due_in_s=100)
    now = clock.advance(60)
    for owner in ("tick-a", "tick-b", "tick-a"):
        for shard in range(rt.settings.shards):
            Tick(rt.store, rt.queue, rt.settings, shard, owner=owner).run(now)
        now = clock.advance(rt.settings.shard_lease_s + 1)

    # Then each job was fired once: one message per execution
    messages = _dispatch_messages(rt)
    assert sorted(m["execution_id"] for m in messages) == sorted(execution_ids)


def test_tick_leaves_jobs_beyond_the_lookahead(rt: Runtime, clock: ManualClock) -> None:
    _submit_far_jobs(rt, 3, due_in_s=3600)
    fired = [Tick(rt.store, rt.queue, rt.settings, s, "t").run(clock.now()).fired for s in range(2)]
    assert fired == [[], []]
