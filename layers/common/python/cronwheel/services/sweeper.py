"""The sweeper: finds executions nothing else will move and moves them.

Each execution that may need help carries a `sweep_at` in the sparse sweep index: a queued one
whose message may be lost, a running one whose worker may have died, a retry beyond SQS's reach,
a finished one whose follow-ups (dependents to start, a dead event to publish) may not have run.
Every write is conditional on state and fencing token, so two sweeps at once do no double work.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from cronwheel.dead_events import DeadEventPublisher, publisher_for
from cronwheel.dispatch_queue import MAX_DELAY_S, DispatchMessage, DispatchQueue
from cronwheel.domain import lifecycle
from cronwheel.domain.lifecycle import AttemptResult
from cronwheel.domain.long_jobs import is_long_job
from cronwheel.domain.model import Execution, ExecutionState, HttpTarget, Outcome
from cronwheel.services.follow_ups import (
    clear_marker,
    plan_follow_ups,
    retention_end,
    run_follow_ups,
)
from cronwheel.services.recording import record_attempt_end
from cronwheel.settings import Settings
from cronwheel.store.store import Store

PAGE = 200


@dataclass
class SweepReport:
    requeued: list[str] = field(default_factory=list)
    reaped: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    followed_up: list[str] = field(default_factory=list)  # finished ones whose follow-ups ran
    # (tenant, state, attempt) of each attempt the sweeper ended
    ended: list[tuple[str, ExecutionState, int]] = field(default_factory=list)


class Sweeper:
    def __init__(
        self,
        store: Store,
        queue: DispatchQueue,
        settings: Settings,
        dead_events: DeadEventPublisher | None = None,
    ) -> None:
        self._store = store
        self._queue = queue
        self._settings = settings
        self._dead_events = dead_events or publisher_for(settings)

    def sweep(self, now: datetime) -> SweepReport:
        report = SweepReport()
        for shard in range(self._settings.shards):
            for execution in self._store.sweep_candidates(shard, now, PAGE):
                self._sweep_one(execution, now, report)
        return report

    def _sweep_one(self, execution: Execution, now: datetime, report: SweepReport) -> None:
        if execution.state is ExecutionState.SCHEDULED:
            # Its tick never came (or its job item was never written): queue it from here.
            self._requeue(
                replace(execution, state=ExecutionState.QUEUED), now, report, execution.state
            )
        elif execution.state.is_claimable:
            self._requeue(execution, now, report)
        elif execution.state is ExecutionState.RUNNING:
            if execution.lease_expires_at is not None and execution.lease_expires_at <= now:
                self._reap(execution, now, report)
        else:
            self._follow_up(execution, now, report)

    def _follow_up(self, execution: Execution, now: datetime, report: SweepReport) -> None:
        """A finished execution still marked: its writer died (or its dead event could not be
        published) before the follow-ups were done. Do them, then take it out of the index; if
        they fail again, look again after another grace rather than at every sweep."""
        follow_ups = plan_follow_ups(self._store, self._dead_events, execution, now)
        if follow_ups.pending:
            done = run_follow_ups(
                self._store, self._queue, self._dead_events, follow_ups, execution, now
            )
            if not done:
                self._store.transition(
                    execution,
                    expect_state=execution.state,
                    expect_token=execution.fencing_token,
                    sweep_at=now + timedelta(seconds=self._settings.delivery_grace_s),
                    expires_at=retention_end(self._settings, execution, now),
                )
                return
            report.followed_up.append(execution.id)
        if clear_marker(self._store, self._settings, execution, now):
            report.cleared.append(execution.id)

    def _requeue(
        self,
        execution: Execution,
        now: datetime,
        report: SweepReport,
        previous_state: ExecutionState | None = None,
    ) -> None:
        due = execution.next_due_at
        grace = timedelta(seconds=self._settings.delivery_grace_s)
        within_reach = (due - now).total_seconds() <= MAX_DELAY_S
        sweep_at = max(due, now) + grace if within_reach else due - timedelta(seconds=MAX_DELAY_S)
        if not self._store.transition(
            execution,
            expect_state=previous_state or execution.state,
            expect_token=execution.fencing_token,
            sweep_at=sweep_at,
        ):
            return
        if within_reach:
            # At-least-once: if the first message was only slow, the dispatcher drops the second.
            # Marked admitted: pacing it again would give one execution two turns of its tenant.
            message = DispatchMessage(execution.id, execution.fencing_token, due, paced=True)
            self._queue.send([message], now)
            report.requeued.append(execution.id)

    def _reap(self, execution: Execution, now: datetime, report: SweepReport) -> None:
        """A worker's lease ran out: count the attempt as failed, then retry or give up.

        A long job past its `timeout_s` failed by `timeout`; any other expiry (a worker that
        died, a long job whose heartbeats stopped) by `lease_expired`."""
        timeout_s = _timeout_passed(execution, now)
        if timeout_s is not None:
            result = AttemptResult(Outcome.TIMEOUT, error=f"timeout: ran past {timeout_s} s")
            reason = "timeout"
        else:
            result = AttemptResult(
                Outcome.FAILED, error="lease_expired: the worker stopped reporting"
            )
            reason = "lease_expired"
        finished = lifecycle.complete(execution, now, result)
        if finished.state is ExecutionState.DEAD:
            finished = replace(finished, reason=reason)
        if record_attempt_end(
            self._store,
            self._queue,
            self._settings,
            finished=finished,
            running_token=execution.fencing_token,
            now=now,
            dead_events=self._dead_events,
        ):
            report.reaped.append(execution.id)
            report.ended.append((execution.tenant, finished.state, execution.attempt))


def _timeout_passed(execution: Execution, now: datetime) -> int | None:
    """A long job's `timeout_s` when its attempt outlived it, else None (short jobs are leased
    for their timeout, so their expiry says only that the worker stopped)."""
    target = execution.target
    if not isinstance(target, HttpTarget) or not is_long_job(target):
        return None
    if execution.started_at is None:
        return None
    deadline = execution.started_at + timedelta(seconds=target.timeout_s)
    return target.timeout_s if deadline <= now else None
