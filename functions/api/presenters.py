"""Domain records as API documents."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

from cronwheel.domain.instants import format_instant
from cronwheel.domain.model import Execution, Job
from cronwheel.domain.schedule import Schedule
from cronwheel.services.schedules import Occurrence
from cronwheel.store.codec import retry_to_doc, target_to_doc

from .schemas import (
    AttemptOut,
    ExecutionOut,
    JobOut,
    OccurrenceOut,
    OccurrencePage,
    ScheduleOut,
)


def _instant(value: datetime | None) -> str | None:
    return format_instant(value) if value else None


def execution_out(execution: Execution) -> ExecutionOut:
    return ExecutionOut(
        id=execution.id,
        tenant=execution.tenant,
        schedule_id=execution.schedule_id,
        job_id=execution.job_id,
        scheduled_for=format_instant(execution.scheduled_for),
        state=execution.state.value,
        attempt=execution.attempt,
        fencing_token=execution.fencing_token,
        trigger=execution.trigger.value,
        priority=execution.priority.value,
        created_at=format_instant(execution.created_at),
        started_at=_instant(execution.started_at),
        finished_at=_instant(execution.finished_at),
        next_attempt_at=_instant(execution.next_attempt_at),
        reason=execution.reason,
        attempts=[
            AttemptOut(
                **{
                    **asdict(attempt),
                    "started_at": format_instant(attempt.started_at),
                    "finished_at": _instant(attempt.finished_at),
                    "outcome": attempt.outcome.value if attempt.outcome else None,
                }
            )
            for attempt in execution.attempts
        ],
    )


def job_out(job: Job, execution: Execution | None) -> JobOut:
    return JobOut(
        id=job.id,
        tenant=job.tenant,
        name=job.name,
        execution_id=job.execution_id,
        run_at=format_instant(job.run_at),
        state=execution.state.value if execution else "scheduled",
        target=target_to_doc(job.target),
        payload=job.payload,
        retry=retry_to_doc(job.retry),
        priority=job.priority.value,
        idempotency_key=job.idempotency_key,
        created_at=format_instant(job.created_at),
    )


def schedule_out(schedule: Schedule, last: Execution | None) -> ScheduleOut:
    return ScheduleOut(
        id=schedule.id,
        tenant=schedule.tenant,
        name=schedule.name,
        cron=schedule.cron,
        rate=schedule.rate,
        after=schedule.after,
        timezone=schedule.timezone,
        start_at=_instant(schedule.start_at),
        end_at=_instant(schedule.end_at),
        target=target_to_doc(schedule.target),
        payload=schedule.payload,
        retry=retry_to_doc(schedule.retry),
        concurrency=schedule.concurrency.value,
        misfire=schedule.misfire.value,
        catch_up_limit=schedule.catch_up_limit,
        misfire_grace_s=schedule.misfire_grace_s,
        jitter_s=schedule.jitter_s,
        priority=schedule.priority.value,
        paused=schedule.paused,
        description=schedule.description,
        labels=schedule.labels,
        version=schedule.version,
        created_at=format_instant(schedule.created_at),
        updated_at=format_instant(schedule.updated_at),
        next_run_at=_instant(schedule.next_run_at),
        last_run_at=_instant(last.scheduled_for) if last else None,
        last_status=last.state.value if last else None,
    )


def occurrences_out(occurrences: list[Occurrence]) -> OccurrencePage:
    return OccurrencePage(
        items=[
            OccurrenceOut(
                scheduled_for=format_instant(o.scheduled_for),
                local_time=o.local_time.isoformat(timespec="seconds"),
            )
            for o in occurrences
        ]
    )
