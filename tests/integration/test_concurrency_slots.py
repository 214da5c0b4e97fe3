"""Concurrency slots move with the `running` state, in the same write, so they cannot drift."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronwheel.clock import ManualClock
from cronwheel.domain import lifecycle
from cronwheel.domain.lifecycle import AttemptResult
from cronwheel.domain.model import Execution, HttpTarget, Outcome, Priority, RetryPolicy
from cronwheel.runtime import Runtime
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel.services.sweeper import Sweeper
from cronwheel.store.store import ClaimResult
from tests.integration.conftest import ACME


def _queued(rt: Runtime, clock: ManualClock, n: int) -> list[Execution]:
    service = JobService(rt.store, rt.queue, rt.settings)
    request = JobRequest(
        target=HttpTarget(url="http://t/x"),
        payload={},
        retry=RetryPolicy(max_attempts=1),
        priority=Priority.NORMAL,
    )
    return [service.submit(ACME, request, clock.now()).execution for _ in range(n)]


def _running(rt: Runtime) -> int:
    return rt.store.running_slots("acme")


@pytest.fixture
def quiet(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rt.queue, "send", lambda messages, now: [])


def test_claims_beyond_the_limit_get_no_slot_until_one_is_given_back(
    rt: Runtime, clock: ManualClock, quiet: None
) -> None:
    # Given three queued executions and a limit of two
    executions = _queued(rt, clock, 3)
    running = [lifecycle.claim(e, clock.now(), timedelta(seconds=30)) for e in executions]
    results = [
        rt.store.claim(r, expect_state=e.state, expect_token=0, max_concurrency=2)
        for r, e in zip(running, executions, strict=True)
    ]

    # Then two are claimed and the third waits, without using an attempt
    assert results == [ClaimResult.CLAIMED, ClaimResult.CLAIMED, ClaimResult.NO_SLOT]
    third = rt.store.get_execution(executions[2].id, consistent=True)
    assert third is not None and third.attempt == 0

    # When one finishes, its slot is back: the third can now be claimed
    done = lifecycle.complete(running[0], clock.advance(1), AttemptResult(Outcome.SUCCEEDED))
    assert rt.store.transition(done, expect_state=running[0].state, expect_token=1, sweep_at=None)
    assert (
        rt.store.claim(
            running[2], expect_state=executions[2].state, expect_token=0, max_concurrency=2
        )
        is ClaimResult.CLAIMED
    )

    # And a zombie's rejected result gives nothing back twice
    assert not rt.store.transition(
        done, expect_state=running[0].state, expect_token=1, sweep_at=None
    )
    assert _running(rt) == 2

    # And slots held by dead workers come back when the sweeper reaps their leases
    Sweeper(rt.store, rt.queue, rt.settings).sweep(clock.advance(120))
    assert _running(rt) == 0
