"""Zombies: a worker or a tick that was paused past its lease comes back and is fenced out."""

from __future__ import annotations

from datetime import timedelta

import boto3
import pytest

from cronwheel.clock import ManualClock
from cronwheel.dispatch_queue import DispatchMessage
from cronwheel.domain.model import (
    Backoff,
    ExecutionState,
    HttpTarget,
    Outcome,
    Priority,
    RetryPolicy,
)
from cronwheel.runtime import Runtime
from cronwheel.services.dispatch import Dispatcher
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel.services.schedules import ScheduleService
from cronwheel.services.sweeper import Sweeper
from cronwheel.services.tick import Tick
from cronwheel.store.store import LeaseLost
from tests.integration.conftest import ACME
from tests.support.fake_target import Delivery, FakeTarget


@pytest.fixture
def no_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    # moto holds delayed messages in real time; these tests read what was sent, not when.
    monkeypatch.setattr("cronwheel.dispatch_queue.delay_for", lambda due_at, now: 0)


def _take_messages(rt: Runtime) -> list[DispatchMessage]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    taken = []
    while True:
        got = sqs.receive_message(
            QueueUrl=rt.settings.dispatch_queue_url, MaxNumberOfMessages=10, VisibilityTimeout=600
        ).get("Messages", [])
        if not got:
            return taken
        for message in got:
            taken.append(DispatchMessage.from_json(message["Body"]))
            sqs.delete_message(
                QueueUrl=rt.settings.dispatch_queue_url, ReceiptHandle=message["ReceiptHandle"]
            )


def test_a_worker_paused_past_its_lease_cannot_overwrite_the_newer_attempt(
    rt: Runtime, clock: ManualClock, no_delay: None
) -> None:
    # Given a job due now, with a retry left
    submitted = JobService(rt.store, rt.queue, rt.settings).submit(
        ACME,
        JobRequest(
            target=HttpTarget(url="http://127.0.0.1:9/hook", timeout_s=10),
            payload={},
            retry=RetryPolicy(max_attempts=3, backoff=Backoff.FIXED, initial_s=5, max_s=5),
            priority=Priority.NORMAL,
        ),
        clock.now(),
    )
    execution_id = submitted.execution.id
    [first_message] = _take_messages(rt)
    outcomes = []

    def meanwhile(delivery: Delivery) -> int:
        """Attempt 1 stalls inside the call; the world moves on without it."""
        if delivery.attempt == 1:
            # Its lease (10 s timeout + 30 s slack) runs out and the sweeper reaps it
            clock.advance(rt.settings.worker_lease_slack_s + 11)
            report = Sweeper(rt.store, rt.queue, rt.settings).sweep(clock.now())
            assert report.reaped == [execution_id]
            # And attempt 2, with a new fencing token, runs on another worker and succeeds
            clock.advance(5)
            [retry] = _take_messages(rt)
            outcomes.append(second_worker.handle(retry))
        return 200  # the zombie's call succeeds too, late

    target = FakeTarget(meanwhile)
    zombie_worker = Dispatcher(rt.store, rt.queue, target, rt.sqs, rt.settings, clock)  # type: ignore[arg-type]
    second_worker = Dispatcher(rt.store, rt.queue, target, rt.sqs, rt.settings, clock)  # type: ignore[arg-type]

    # When attempt 1 finally reports its success
    zombie = zombie_worker.handle(first_message)

    # Then its result is rejected, and attempt 2's result stands
    assert zombie.note == "fenced out" and zombie.state is None
    assert [o.state for o in outcomes] == [ExecutionState.SUCCEEDED]
    final = rt.store.get_execution(execution_id, consistent=True)
    assert final is not None
    assert (final.state, final.attempt, final.fencing_token) == (ExecutionState.SUCCEEDED, 2, 2)
    assert [a.outcome for a in final.attempts] == [Outcome.FAILED, Outcome.SUCCEEDED]
    assert (final.attempts[0].error or "").startswith("lease_expired")
    # And the target saw the stale fencing token and the newer one, for the same execution
    assert [(d.execution_id, d.attempt, d.fencing_token) for d in target.deliveries] == [
        (execution_id, 1, 1),
        (execution_id, 2, 2),
    ]
    # And the zombie's late finish gave back no concurrency slot it no longer held
    assert rt.store.running_slots("acme") == 0


def test_a_tick_paused_past_its_shard_lease_fires_no_schedule_after_the_takeover(
    rt: Runtime, clock: ManualClock, no_delay: None
) -> None:
    # Given a schedule whose next occurrence is within the lookahead of a later tick
    schedule = ScheduleService(rt.store, rt.queue, rt.settings).create(
        ACME,
        {"name": "nightly", "target": HttpTarget(url="http://127.0.0.1:9/x"), "rate": "5 minutes"},
        clock.now(),
    )
    now = clock.advance(250)  # the 300 s occurrence is due within 60 s
    shard = next(
        s
        for s in range(rt.settings.shards)
        if Tick(rt.store, rt.queue, rt.settings, s, "probe").collect(now)
    )

    # And tick A holding the shard with the schedule read, then paused past its lease
    tick_a = Tick(rt.store, rt.queue, rt.settings, shard, owner="tick-a")
    assert tick_a.acquire(now) is not None
    items_a = tick_a.collect(now)
    assert [i.id for i in items_a] == [schedule.id]

    # When tick B takes the shard over and fires it
    later = now + timedelta(seconds=rt.settings.shard_lease_s + 1)
    report_b = Tick(rt.store, rt.queue, rt.settings, shard, owner="tick-b").run(later)
    assert report_b.took_over and [i.id for i in report_b.fired] == [schedule.id]

    # Then tick A's firing is refused as a whole: it learns it lost the lease
    with pytest.raises(LeaseLost):
        tick_a.fire(items_a, later)

    # And the occurrence has one execution and one message, and the schedule moved on once
    executions = rt.store.executions_of(schedule.id, set(ExecutionState))
    assert [e.scheduled_for for e in executions] == [schedule.created_at + timedelta(minutes=5)]
    assert [m.execution_id for m in _take_messages(rt)] == [executions[0].id]
    stored = rt.store.get_schedule(schedule.id)
    assert stored is not None
    assert stored.next_occurrence == schedule.created_at + timedelta(minutes=10)
