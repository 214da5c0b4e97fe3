"""Recurring schedules and what the tick does with a due one (misfire policy included)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from cronwheel.domain.cron import Recurrence, compile_recurrence, jitter_offset_s
from cronwheel.domain.ids import execution_id
from cronwheel.domain.model import (
    Concurrency,
    Execution,
    ExecutionState,
    Misfire,
    Priority,
    RetryPolicy,
    Target,
    Trigger,
)

# Per tick and schedule: how many occurrences are looked at, and how many missed ones get a
# record of their own (the rest are counted in the reason of the last one), so a long outage
# never wedges a schedule.
MAX_OCCURRENCES_PER_TICK = 60
MAX_SKIP_RECORDS = 30
MAX_MISSED_WALK = 10_000


@dataclass
class Schedule:
    id: str
    tenant: str
    name: str
    target: Target
    created_at: datetime
    updated_at: datetime
    cron: str | None = None
    rate: str | None = None
    after: str | None = None
    timezone: str = "UTC"
    start_at: datetime | None = None
    end_at: datetime | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    concurrency: Concurrency = Concurrency.FORBID
    misfire: Misfire = Misfire.RUN_ONCE
    catch_up_limit: int = 10
    misfire_grace_s: int = 60
    jitter_s: int = 0
    priority: Priority = Priority.NORMAL
    paused: bool = False
    description: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    version: int = 1
    timing_version: int = 1
    next_occurrence: datetime | None = None

    def recurrence(self) -> Recurrence | None:
        """None for a dependency schedule (`after`), which has no times of its own."""
        if self.after is not None:
            return None
        return compile_recurrence(
            cron=self.cron,
            rate=self.rate,
            timezone=self.timezone,
            seed=self.id,
            start_at=self.start_at,
            end_at=self.end_at,
            anchor=self.created_at,
        )

    def due_at(self, occurrence: datetime) -> datetime:
        """When an occurrence runs: its nominal time plus its deterministic jitter."""
        return occurrence + timedelta(seconds=jitter_offset_s(self.id, occurrence, self.jitter_s))

    @property
    def next_run_at(self) -> datetime | None:
        if self.paused or self.next_occurrence is None:
            return None
        return self.due_at(self.next_occurrence)

    def first_occurrence(self, now: datetime) -> datetime | None:
        recurrence = self.recurrence()
        return recurrence.next_after(now) if recurrence else None

    def execution(
        self,
        occurrence: datetime,
        trigger: Trigger,
        now: datetime,
        *,
        state: ExecutionState,
        reason: str | None = None,
        execution_id_: str | None = None,
        due_at: datetime | None = None,
    ) -> Execution:
        return Execution(
            id=execution_id_ or execution_id(self.id, occurrence, trigger),
            tenant=self.tenant,
            schedule_id=self.id,
            scheduled_for=occurrence,
            due_at=due_at or self.due_at(occurrence),
            trigger=trigger,
            target=self.target,
            payload=self.payload,
            retry=self.retry,
            priority=self.priority,
            created_at=now,
            state=state,
            reason=reason,
            finished_at=now if state.is_terminal else None,
            schedule_timing_version=self.timing_version,
        )


@dataclass
class FiringPlan:
    """What one tick writes for one schedule: new executions and where the schedule moves."""

    executions: list[Execution]
    next_occurrence: datetime | None

    @property
    def to_enqueue(self) -> list[Execution]:
        return [e for e in self.executions if e.state is ExecutionState.QUEUED]


def plan_firing(schedule: Schedule, now: datetime, lookahead: timedelta) -> FiringPlan:
    """Every occurrence due by `now + lookahead` is fired, or recorded `skipped` with reason
    `misfire` when it is later than `misfire_grace_s` and the policy says so:
    `skip` fires none of the missed, `run_once` the latest, `catch_up` the latest
    `catch_up_limit` of them, oldest first, each with trigger `catch_up`."""
    recurrence = schedule.recurrence()
    occurrence = schedule.next_occurrence
    if recurrence is None or occurrence is None:
        return FiringPlan([], None)
    horizon = now + lookahead
    grace_edge = now - timedelta(seconds=schedule.misfire_grace_s)
    missed: deque[datetime] = deque(maxlen=MAX_OCCURRENCES_PER_TICK)
    missed_count = 0
    on_time: list[datetime] = []
    while occurrence is not None and schedule.due_at(occurrence) <= horizon:
        if occurrence < grace_edge:
            missed.append(occurrence)
            missed_count += 1
            if missed_count >= MAX_MISSED_WALK:
                # A very long outage: stop walking it and resume from the present.
                occurrence = recurrence.next_after(grace_edge)
                missed_count += 1  # at least one more was missed; the reason says "more"
                continue
        else:
            on_time.append(occurrence)
            if len(on_time) >= MAX_OCCURRENCES_PER_TICK:
                occurrence = recurrence.next_after(occurrence)
                break
        occurrence = recurrence.next_after(occurrence)

    kept = list(missed)
    fire_missed: list[datetime] = []
    if schedule.misfire is Misfire.RUN_ONCE and kept:
        fire_missed = kept[-1:]
    elif schedule.misfire is Misfire.CATCH_UP:
        fire_missed = kept[-schedule.catch_up_limit :]
    skipped = [o for o in kept if o not in fire_missed]

    executions: list[Execution] = []
    recorded = skipped[-MAX_SKIP_RECORDS:]
    unrecorded = missed_count - len(fire_missed) - len(recorded)
    for index, missed_at in enumerate(recorded):
        reason = "misfire"
        if index == 0 and unrecorded:
            reason = f"misfire ({unrecorded} earlier missed occurrences not recorded one by one)"
        executions.append(
            schedule.execution(
                missed_at, Trigger.SCHEDULE, now, state=ExecutionState.SKIPPED, reason=reason
            )
        )
    catch_up_trigger = (
        Trigger.CATCH_UP if schedule.misfire is Misfire.CATCH_UP else Trigger.SCHEDULE
    )
    for missed_at in fire_missed:
        executions.append(
            schedule.execution(
                missed_at, catch_up_trigger, now, state=ExecutionState.QUEUED, due_at=now
            )
        )
    for occurrence_at in on_time:
        executions.append(
            schedule.execution(occurrence_at, Trigger.SCHEDULE, now, state=ExecutionState.QUEUED)
        )
    return FiringPlan(executions, occurrence)
