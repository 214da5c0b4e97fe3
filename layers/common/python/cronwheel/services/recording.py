"""Writing the end of an attempt, shared by the dispatcher and the sweeper."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from cronwheel.dead_events import DeadEventPublisher, publisher_for
from cronwheel.dispatch_queue import MAX_DELAY_S, DispatchMessage, DispatchQueue
from cronwheel.domain.model import Execution, ExecutionState
from cronwheel.services.follow_ups import (
    clear_marker,
    marker_for,
    plan_follow_ups,
    retention_end,
    run_follow_ups,
)
from cronwheel.settings import Settings
from cronwheel.store.store import Store


def record_attempt_end(
    store: Store,
    queue: DispatchQueue,
    settings: Settings,
    *,
    finished: Execution,
    running_token: int,
    now: datetime,
    dead_events: DeadEventPublisher | None = None,
) -> bool:
    """Write the finished attempt if the attempt still holds its fencing token, then enqueue a
    retry that SQS can delay. A retry further out waits in the store: its sweep time is when it
    comes within SQS's reach. A success starts the schedules that run after it and a `dead` end
    is announced (`follow_ups`); both only once the write stands, and both recoverable by the
    sweeper. Returns False when the attempt was fenced out."""
    dead_events = dead_events or publisher_for(settings)
    sweep_at: datetime | None = None
    retry: DispatchMessage | None = None
    if finished.state is ExecutionState.RETRY_SCHEDULED and finished.next_attempt_at:
        due = finished.next_attempt_at
        if (due - now).total_seconds() <= MAX_DELAY_S:
            sweep_at = due + timedelta(seconds=settings.delivery_grace_s)
            retry = DispatchMessage(finished.id, finished.fencing_token, due)
        else:
            sweep_at = due - timedelta(seconds=MAX_DELAY_S)
    follow_ups = plan_follow_ups(store, dead_events, finished, now)
    sweep_at = sweep_at or marker_for(follow_ups, settings, now)
    if not store.transition(
        finished,
        expect_state=ExecutionState.RUNNING,
        expect_token=running_token,
        sweep_at=sweep_at,
        expires_at=retention_end(settings, finished, now),
    ):
        return False
    if retry is not None:
        queue.send([retry], now)
    if follow_ups.pending and run_follow_ups(store, queue, dead_events, follow_ups, finished, now):
        clear_marker(store, settings, finished, now)
    return True


def end_without_attempt(
    store: Store,
    settings: Settings,
    execution: Execution,
    state: ExecutionState,
    reason: str,
    now: datetime,
) -> bool:
    """End an execution with a reason and no (further) attempt: skipped, cancelled.

    Conditional on the state and token it was read with, so it never overrides a newer move;
    a running attempt ended this way has its late result rejected by fencing."""
    ended = replace(execution, state=state, reason=reason, finished_at=now, lease_expires_at=None)
    return store.transition(
        ended,
        expect_state=execution.state,
        expect_token=execution.fencing_token,
        sweep_at=None,
        expires_at=now + settings.history_retention,
    )
