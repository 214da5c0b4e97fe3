"""Managing recurring schedules: create, change, pause, resume, trigger, delete, preview."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from cronwheel.dispatch_queue import DispatchMessage, DispatchQueue
from cronwheel.domain.cron import compile_recurrence
from cronwheel.domain.ids import new_id
from cronwheel.domain.model import (
    Execution,
    ExecutionState,
    Principal,
    Role,
    Trigger,
    check_secret_refs,
)
from cronwheel.domain.schedule import Schedule, plan_firing
from cronwheel.errors import Conflict, FailedPrecondition, InvalidArgument, NotFound
from cronwheel.services.auth import require_own_tenant, require_role
from cronwheel.services.jobs import check_payload_size, check_target_egress
from cronwheel.services.quotas import (
    admit_execution,
    admit_schedule,
    apply_daily_quotas,
    count_daily_usage,
)
from cronwheel.services.recording import end_without_attempt
from cronwheel.settings import Settings
from cronwheel.store.store import DueItem, Store

# Changing any of these moves the schedule's times: pending runs of the old times are superseded.
TIMING_FIELDS = ("cron", "rate", "after", "timezone", "start_at", "end_at", "jitter_s")
MAX_DEPENDENCY_DEPTH = 50


@dataclass(frozen=True)
class Occurrence:
    scheduled_for: datetime
    local_time: datetime


class ScheduleService:
    def __init__(self, store: Store, queue: DispatchQueue, settings: Settings) -> None:
        self._store = store
        self._queue = queue
        self._settings = settings

    # -- reads -------------------------------------------------------------------------------

    def get(self, principal: Principal, schedule_id: str) -> Schedule:
        schedule = self._store.get_schedule(schedule_id)
        if schedule is None or schedule.tenant != principal.tenant:
            raise NotFound(f"schedule {schedule_id} not found")
        return schedule

    def last_run(self, schedule: Schedule) -> Execution | None:
        return self._store.latest_execution_of(schedule.id)

    def list_schedules(
        self,
        principal: Principal,
        *,
        name_prefix: str | None,
        paused: bool | None,
        limit: int,
        cursor: str | None,
    ) -> tuple[list[Schedule], str | None]:
        return self._store.list_schedules(
            principal.tenant, name_prefix=name_prefix, paused=paused, limit=limit, cursor=cursor
        )

    def next_runs(
        self, principal: Principal, schedule_id: str, count: int, now: datetime
    ) -> list[Occurrence]:
        schedule = self.get(principal, schedule_id)
        recurrence = schedule.recurrence()
        if recurrence is None:
            return []
        start = (
            schedule.next_occurrence - timedelta(microseconds=1)
            if schedule.next_occurrence
            else now
        )
        return [
            Occurrence(o, recurrence.local_time(o))
            for o in _take(
                recurrence.iter_after(max(start, now - timedelta(microseconds=1))), count
            )
        ]

    @staticmethod
    def preview(
        *, cron: str | None, rate: str | None, timezone: str, count: int, after: datetime
    ) -> list[Occurrence]:
        recurrence = compile_recurrence(cron=cron, rate=rate, timezone=timezone, anchor=after)
        return [
            Occurrence(o, recurrence.local_time(o))
            for o in _take(recurrence.iter_after(after), count)
        ]

    # -- writes ------------------------------------------------------------------------------

    def create(self, principal: Principal, fields: dict[str, Any], now: datetime) -> Schedule:
        require_own_tenant(principal, fields.pop("tenant", None))
        require_role(principal, Role.OPERATOR)
        check_payload_size(fields.get("payload", {}))
        schedule = Schedule(
            id=new_id("sch"), tenant=principal.tenant, created_at=now, updated_at=now, **fields
        )
        self._validate(schedule)
        admit_schedule(self._store, principal.tenant)
        schedule.next_occurrence = schedule.first_occurrence(now)
        self._store.create_schedule(schedule)
        self._fire_if_due(schedule, now)
        return schedule

    def update(
        self,
        principal: Principal,
        schedule_id: str,
        changes: dict[str, Any],
        if_match: int | None,
        now: datetime,
    ) -> Schedule:
        require_own_tenant(principal, changes.pop("tenant", None))
        require_role(principal, Role.OPERATOR)
        current = self.get(principal, schedule_id)
        if if_match is not None and if_match != current.version:
            raise FailedPrecondition(
                f"schedule is at version {current.version}, not {if_match}", field="If-Match"
            )
        if "payload" in changes:
            check_payload_size(changes["payload"])
        updated = replace(current, **changes, version=current.version + 1, updated_at=now)
        if {"cron", "rate", "after"} & set(changes):
            # The given kind replaces the others: PATCH {"rate": ...} turns a cron schedule into a rate one.
            for kind in ("cron", "rate", "after"):
                if kind not in changes:
                    setattr(updated, kind, None)
        self._validate(updated)
        if any(getattr(updated, f) != getattr(current, f) for f in TIMING_FIELDS):
            updated.timing_version = current.timing_version + 1
            updated.next_occurrence = updated.first_occurrence(now)
        return self._save(current, updated, now)

    def set_paused(
        self, principal: Principal, schedule_id: str, paused: bool, now: datetime
    ) -> Schedule:
        require_role(principal, Role.OPERATOR)
        current = self.get(principal, schedule_id)
        if current.paused == paused:
            return current
        updated = replace(current, paused=paused, version=current.version + 1, updated_at=now)
        saved = self._save(current, updated, now)
        self._store.audit(principal, "resume" if not paused else "pause", schedule_id, now)
        return saved

    def trigger(self, principal: Principal, schedule_id: str, now: datetime) -> Execution:
        """A manual run now, with its own execution id; runs even while the schedule is paused."""
        require_role(principal, Role.OPERATOR)
        schedule = self.get(principal, schedule_id)
        admit_execution(self._store, principal.tenant, now)
        execution = schedule.execution(
            now,
            Trigger.MANUAL,
            now,
            state=ExecutionState.QUEUED,
            execution_id_=new_id("ex"),
            due_at=now,
        )
        self._store.put_new_execution(execution)
        self._queue.send([DispatchMessage(execution.id, 0, now)], now)
        self._store.audit(principal, "trigger", schedule_id, now, {"execution_id": execution.id})
        return execution

    def delete(self, principal: Principal, schedule_id: str, now: datetime) -> None:
        require_role(principal, Role.OPERATOR)
        schedule = self.get(principal, schedule_id)
        self._store.delete_schedule(schedule)
        pending = {ExecutionState.SCHEDULED, ExecutionState.QUEUED, ExecutionState.RETRY_SCHEDULED}
        for execution in self._store.executions_of(schedule.id, pending, limit=1000):
            end_without_attempt(
                self._store,
                self._settings,
                execution,
                ExecutionState.CANCELLED,
                "schedule_deleted",
                now,
            )
        self._store.audit(principal, "delete", schedule_id, now)

    # -- helpers -----------------------------------------------------------------------------

    def _save(self, current: Schedule, updated: Schedule, now: datetime) -> Schedule:
        if not self._store.save_schedule(
            updated, expect_version=current.version, old_name=current.name
        ):
            raise Conflict("the schedule changed meanwhile; read it again and retry")
        self._fire_if_due(updated, now)
        return updated

    def _fire_if_due(self, schedule: Schedule, now: datetime) -> None:
        """Occurrences due within the lookahead are fired here: the next tick may come too late."""
        due = schedule.next_run_at
        if due is None or due > now + timedelta(seconds=self._settings.lookahead_s):
            return
        snapshot = replace(schedule)
        item = DueItem(schedule.id, "schedule", schedule.tenant, due, None, snapshot)
        plan = plan_firing(snapshot, now, timedelta(seconds=self._settings.lookahead_s))
        apply_daily_quotas(self._store, [(item, plan)], now)
        fired = self._store.fire_schedules(None, [(item, plan)], now)
        count_daily_usage(self._store, fired, now)
        for _, written in fired:
            self._queue.send([DispatchMessage(e.id, 0, e.due_at) for e in written.to_enqueue], now)
            schedule.next_occurrence = written.next_occurrence

    def _validate(self, schedule: Schedule) -> None:
        kinds = [k for k in ("cron", "rate", "after") if getattr(schedule, k) is not None]
        if len(kinds) != 1:
            raise InvalidArgument("give exactly one of cron, rate or after", field="cron")
        check_target_egress(schedule.target, self._settings)
        check_secret_refs(schedule.target, schedule.tenant)
        if schedule.start_at and schedule.end_at and schedule.end_at <= schedule.start_at:
            raise InvalidArgument("end_at must be after start_at", field="end_at")
        if schedule.after is not None:
            self._check_dependency(schedule)
        else:
            schedule.recurrence()  # raises ScheduleExpressionError naming the field

    def _check_dependency(self, schedule: Schedule) -> None:
        upstream_id: str | None = schedule.after
        for _ in range(MAX_DEPENDENCY_DEPTH):
            if upstream_id is None:
                return
            if upstream_id == schedule.id:
                raise InvalidArgument("after would make a dependency cycle", field="after")
            upstream = self._store.get_schedule(upstream_id)
            if upstream is None or upstream.tenant != schedule.tenant:
                raise InvalidArgument(f"schedule {upstream_id} not found", field="after")
            upstream_id = upstream.after
        raise InvalidArgument(
            f"dependency chain is longer than {MAX_DEPENDENCY_DEPTH}", field="after"
        )


def _take(iterator: Any, count: int) -> list[datetime]:
    taken: list[datetime] = []
    for value in iterator:
        taken.append(value)
        if len(taken) >= count:
            break
    return taken
