"""Domain records as API documents."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

from cronwheel.domain.instants import format_instant
from cronwheel.domain.model import Execution, Job
from cronwheel.store.codec import retry_to_doc, target_to_doc

from .schemas import AttemptOut, ExecutionOut, JobOut


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
