"""The sweeper recovers work nothing else would move; zombie results are fenced out."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from cronwheel.clock import ManualClock
from cronwheel.domain import lifecycle
from cronwheel.domain.lifecycle import AttemptResult
from cronwheel.domain.model import ExecutionState, HttpTarget, Outcome, Priority, RetryPolicy
from cronwheel.runtime import Runtime
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel.services.sweeper import Sweeper
from cronwheel.store.store import ClaimResult
from tests.integration.conftest import ACME


def _submit_now(rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, *, send: bool):
    with monkeypatch.context() as patch:
        if not send:  # the process "dies" between the record and the enqueue
            patch.setattr(rt.queue, "send", lambda messages, now: list(messages))
        submitted = JobService(rt.store, rt.queue, rt.settings).submit(
            ACME,
            JobRequest(
                target=HttpTarget(url="http://127.0.0.1:9/x", timeout_s=10),
                payload={},
                retry=RetryPolicy(max_attempts=2, initial_s=5),
                priority=Priority.NORMAL,
            ),
            clock.now(),
        )
    return submitted.execution


def test_queued_execution_whose_message_was_lost_is_requeued_after_grace(
    rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a queued execution whose message never reached SQS
    execution = _submit_now(rt, clock, monkeypatch, send=False)
    sent: list[str] = []
    monkeypatch.setattr(
        rt.queue, "send", lambda messages, now: sent.extend(m.execution_id for m in messages) or []
    )
    sweeper = Sweeper(rt.store, rt.queue, rt.settings)

    # When the sweeper runs before the delivery grace, it leaves it alone
    assert sweeper.sweep(clock.advance(1)).requeued == []
    # And after the grace it re-enqueues it, once per grace period
    report = sweeper.sweep(clock.advance(rt.settings.delivery_grace_s))
    assert report.requeued == [execution.id] and sent == [execution.id]
    assert sweeper.sweep(clock.advance(1)).requeued == []


def test_running_execution_past_its_lease_is_reaped_into_a_retry_then_dead(
    rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an execution claimed by a worker that then died
    execution = _submit_now(rt, clock, monkeypatch, send=True)
    running = lifecycle.claim(execution, clock.now(), timedelta(seconds=40))
    assert (
        rt.store.claim(running, expect_state=execution.state, expect_token=0, max_concurrency=5)
        is ClaimResult.CLAIMED
    )
    monkeypatch.setattr(rt.queue, "send", lambda messages, now: [])
    sweeper = Sweeper(rt.store, rt.queue, rt.settings)

    # When its lease expires and the sweeper runs
    report = sweeper.sweep(clock.advance(41))

    # Then the attempt is failed with reason lease_expired and a retry is scheduled
    assert report.reaped == [execution.id]
    after = rt.store.get_execution(execution.id, consistent=True)
    assert after is not None and after.state is ExecutionState.RETRY_SCHEDULED
    assert after.attempts[0].error and after.attempts[0].error.startswith("lease_expired")

    # And a second worker that also dies leaves it dead with reason lease_expired
    second = lifecycle.claim(after, clock.advance(10), timedelta(seconds=40))
    assert (
        rt.store.claim(second, expect_state=after.state, expect_token=1, max_concurrency=5)
        is ClaimResult.CLAIMED
    )
    sweeper.sweep(clock.advance(41))
    final = rt.store.get_execution(execution.id, consistent=True)
    assert (
        final is not None and final.state is ExecutionState.DEAD and final.reason == "lease_expired"
    )
    assert [a.attempt for a in final.attempts] == [1, 2]


def test_a_long_job_past_its_timeout_is_failed_by_timeout_not_a_lost_worker(
    rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a callback job (timeout 60 s) whose target keeps it alive past its timeout
    with monkeypatch.context() as patch:
        patch.setattr(rt.queue, "send", lambda messages, now: [])
        execution = (
            JobService(rt.store, rt.queue, rt.settings)
            .submit(
                ACME,
                JobRequest(
                    target=HttpTarget(url="http://127.0.0.1:9/x", timeout_s=60, callback=True),
                    payload={},
                    retry=RetryPolicy(max_attempts=1),
                    priority=Priority.NORMAL,
                ),
                clock.now(),
            )
            .execution
        )
    running = lifecycle.claim(execution, clock.now(), timedelta(seconds=90))
    assert (
        rt.store.claim(running, expect_state=execution.state, expect_token=0, max_concurrency=5)
        is ClaimResult.CLAIMED
    )

    # When its lease runs out after the timeout and the sweeper runs
    Sweeper(rt.store, rt.queue, rt.settings).sweep(clock.advance(91))

    # Then the attempt failed by timeout, and with no attempt left it is dead by timeout
    final = rt.store.get_execution(execution.id, consistent=True)
    assert final is not None and (final.state, final.reason) == (ExecutionState.DEAD, "timeout")
    assert final.attempts[0].outcome is Outcome.TIMEOUT
    assert final.attempts[0].error == "timeout: ran past 60 s"


def test_zombie_result_is_rejected_and_the_newer_attempt_stands(
    rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given attempt 1 claimed, then presumed dead and reaped, then attempt 2 claimed
    execution = _submit_now(rt, clock, monkeypatch, send=True)
    first = lifecycle.claim(execution, clock.now(), timedelta(seconds=5))
    assert (
        rt.store.claim(first, expect_state=execution.state, expect_token=0, max_concurrency=5)
        is ClaimResult.CLAIMED
    )
    failed = lifecycle.complete(
        first, clock.advance(6), AttemptResult(Outcome.FAILED, error="lease")
    )
    assert rt.store.transition(
        failed, expect_state=ExecutionState.RUNNING, expect_token=1, sweep_at=None
    )
    second = lifecycle.claim(failed, clock.advance(5), timedelta(seconds=5))
    assert (
        rt.store.claim(second, expect_state=failed.state, expect_token=1, max_concurrency=5)
        is ClaimResult.CLAIMED
    )

    # When the zombie attempt 1 finally reports success
    zombie = lifecycle.complete(first, clock.advance(1), AttemptResult(Outcome.SUCCEEDED))
    accepted = rt.store.transition(
        zombie, expect_state=ExecutionState.RUNNING, expect_token=1, sweep_at=None
    )

    # Then it is rejected and attempt 2 still owns the execution
    assert not accepted
    current = rt.store.get_execution(execution.id, consistent=True)
    assert current is not None
    assert (current.state, current.fencing_token) == (ExecutionState.RUNNING, 2)
    assert replace(current, attempts=[]).attempt == 2
