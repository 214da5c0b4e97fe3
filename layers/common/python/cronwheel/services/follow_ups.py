"""What must happen after an execution ends, made recoverable by its sweep marker.

Two things follow the end of an execution: a `succeeded` run of a schedule starts the schedules
that run `after` it, and a `dead` execution is announced on the stage's dead-events topic. When
either applies, the end is written with a sweep marker (`sweep_at` = now + delivery grace); the
writer does the follow-ups right after its write and then clears the marker. A process that dies
in between, or a publication that fails, leaves the marker, and the sweeper does the follow-ups
again. Both are idempotent: a dependent's execution id derives from the upstream occurrence, and
a repeated dead event names the same execution.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from cronwheel.dead_events import DeadEventPublisher
from cronwheel.dispatch_queue import DispatchMessage, DispatchQueue
from cronwheel.domain.model import Execution, ExecutionState, Trigger
from cronwheel.settings import Settings
from cronwheel.store.store import Store


@dataclass(frozen=True)
class FollowUps:
    dependents: list[Execution] = field(default_factory=list)
    announce_dead: bool = False

    @property
    def pending(self) -> bool:
        return bool(self.dependents) or self.announce_dead


def plan_follow_ups(
    store: Store, dead_events: DeadEventPublisher, ended: Execution, now: datetime
) -> FollowUps:
    """The follow-ups an execution that ended this way needs (a read, no write)."""
    if ended.state is ExecutionState.DEAD:
        return FollowUps(announce_dead=dead_events.enabled)
    if ended.state is ExecutionState.SUCCEEDED and ended.schedule_id is not None:
        return FollowUps(dependents=_dependent_runs(store, ended, now))
    return FollowUps()


def _dependent_runs(store: Store, upstream: Execution, now: datetime) -> list[Execution]:
    """Schedules with `after` the upstream's run now, for the upstream's occurrence."""
    assert upstream.schedule_id is not None
    return [
        downstream.execution(
            upstream.scheduled_for,
            Trigger.DEPENDENCY,
            now,
            state=ExecutionState.QUEUED,
            due_at=now,
        )
        for downstream in store.schedules_after(upstream.schedule_id)
        if not downstream.paused and downstream.tenant == upstream.tenant
    ]


def run_follow_ups(
    store: Store,
    queue: DispatchQueue,
    dead_events: DeadEventPublisher,
    follow_ups: FollowUps,
    ended: Execution,
    now: datetime,
) -> bool:
    """Do the follow-ups; True when all are done and the marker may go.

    A dependent created here carries its own sweep marker (queued), so if its message is lost
    the sweeper sends it; one that already exists was created by an earlier try."""
    messages = [
        DispatchMessage(dependent.id, 0, dependent.due_at)
        for dependent in follow_ups.dependents
        if store.put_new_execution(dependent)
    ]
    if messages:
        queue.send(messages, now)
    return not follow_ups.announce_dead or dead_events.publish(ended)


def marker_for(follow_ups: FollowUps, settings: Settings, now: datetime) -> datetime | None:
    """The sweep time an ended execution is written with while its follow-ups are pending."""
    return now + timedelta(seconds=settings.delivery_grace_s) if follow_ups.pending else None


def clear_marker(store: Store, settings: Settings, ended: Execution, now: datetime) -> bool:
    """Take a finished execution out of the sweep index, keeping its history retention."""
    return store.transition(
        ended,
        expect_state=ended.state,
        expect_token=ended.fencing_token,
        sweep_at=None,
        expires_at=retention_end(settings, ended, now),
    )


def retention_end(settings: Settings, ended: Execution, now: datetime) -> datetime | None:
    if not ended.state.is_terminal:
        return None
    return (ended.finished_at or now) + settings.history_retention
