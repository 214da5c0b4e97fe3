"""Tenant quotas: executions per UTC day and number of schedules. Pure: the store counts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, time, timedelta

from cronwheel.domain.instants import format_instant
from cronwheel.domain.model import ExecutionState
from cronwheel.domain.schedule import FiringPlan


def quota_day(now: datetime) -> str:
    """The UTC day an execution counts against, e.g. `2026-11-30`."""
    return now.astimezone(UTC).date().isoformat()


def day_resets_at(now: datetime) -> datetime:
    """When the daily quota starts again: the next midnight UTC."""
    today = now.astimezone(UTC).date()
    return datetime.combine(today + timedelta(days=1), time(0), tzinfo=UTC)


def daily_quota_message(limit: int, now: datetime) -> str:
    return (
        f"quota max_executions_per_day ({limit}) reached for today (UTC); "
        f"it resets at {format_instant(day_resets_at(now))}"
    )


def schedules_quota_message(limit: int) -> str:
    return (
        f"quota max_schedules ({limit}) reached; it frees up when a schedule is deleted "
        "or an admin raises the limit (PATCH /v1/tenant/limits)"
    )


def quota_skip_reason(limit: int, now: datetime) -> str:
    """Why a scheduled occurrence was recorded `skipped` instead of run."""
    return f"quota_exceeded: {daily_quota_message(limit, now)}"


def within_daily_quota(plans: list[FiringPlan], room: int, reason: str, now: datetime) -> int:
    """Keep the first `room` executions the plans would run and record the rest `skipped` with
    `reason`, in place (the occurrences stay on record: nothing disappears). Returns how many
    run."""
    running = 0
    for plan in plans:
        for index, execution in enumerate(plan.executions):
            if execution.state is not ExecutionState.QUEUED:
                continue
            if running < room:
                running += 1
                continue
            plan.executions[index] = replace(
                execution, state=ExecutionState.SKIPPED, reason=reason, finished_at=now
            )
    return running
