"""Translation between stored items and domain records."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from cronwheel.domain.long_jobs import DEFAULT_HEARTBEAT_S
from cronwheel.domain.model import (
    Attempt,
    Backoff,
    Concurrency,
    Execution,
    ExecutionState,
    HeaderValue,
    HttpTarget,
    Job,
    Misfire,
    Outcome,
    Priority,
    RetryPolicy,
    SecretRef,
    SqsTarget,
    Target,
    Tenant,
    Trigger,
)
from cronwheel.domain.schedule import Schedule
from cronwheel.store.models import ExecutionItem, ScheduleItem, TenantItem

# Response bodies are kept for the most recent attempts only, so an item stays far below 400 KB.
KEPT_RESPONSE_EXCERPTS = 10


def headers_to_doc(headers: dict[str, HeaderValue]) -> dict[str, Any]:
    """A secret header keeps only its reference, `{"secret": name}`: never a value."""
    return {
        name: {"secret": value.name} if isinstance(value, SecretRef) else value
        for name, value in headers.items()
    }


def headers_from_doc(doc: dict[str, Any]) -> dict[str, HeaderValue]:
    return {
        name: SecretRef(str(value["secret"])) if isinstance(value, dict) else str(value)
        for name, value in doc.items()
    }


def target_to_doc(target: Target) -> dict[str, Any]:
    doc = asdict(target)
    if target.rate_limit_per_s is None:
        del doc["rate_limit_per_s"]
    if isinstance(target, HttpTarget):
        doc["headers"] = headers_to_doc(target.headers)
    return doc


def target_from_doc(doc: dict[str, Any]) -> Target:
    if doc.get("type") == "sqs":
        return SqsTarget(queue_url=doc["queue_url"], rate_limit_per_s=_rate(doc))
    return HttpTarget(
        url=doc["url"],
        method=doc.get("method", "POST"),
        headers=headers_from_doc(doc.get("headers") or {}),
        timeout_s=int(doc.get("timeout_s", 30)),
        callback=bool(doc.get("callback", False)),
        heartbeat_s=int(doc.get("heartbeat_s", DEFAULT_HEARTBEAT_S)),
        rate_limit_per_s=_rate(doc),
    )


def _rate(doc: dict[str, Any]) -> float | None:
    rate = doc.get("rate_limit_per_s")
    return float(rate) if rate is not None else None


def retry_to_doc(retry: RetryPolicy) -> dict[str, Any]:
    return {**asdict(retry), "backoff": retry.backoff.value}


def retry_from_doc(doc: dict[str, Any]) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=int(doc["max_attempts"]),
        backoff=Backoff(doc["backoff"]),
        initial_s=int(doc["initial_s"]),
        max_s=int(doc["max_s"]),
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def attempts_to_doc(attempts: list[Attempt]) -> list[dict[str, Any]]:
    docs = []
    keep_from = len(attempts) - KEPT_RESPONSE_EXCERPTS
    for index, attempt in enumerate(attempts):
        doc = asdict(attempt)
        doc["started_at"] = _iso(attempt.started_at)
        doc["finished_at"] = _iso(attempt.finished_at)
        doc["outcome"] = attempt.outcome.value if attempt.outcome else None
        if index < keep_from:
            doc["response_excerpt"] = None
        docs.append(doc)
    return docs


def attempts_from_doc(docs: list[dict[str, Any]]) -> list[Attempt]:
    attempts = []
    for doc in docs:
        started = _dt(doc["started_at"])
        assert started is not None
        attempts.append(
            Attempt(
                attempt=int(doc["attempt"]),
                started_at=started,
                finished_at=_dt(doc.get("finished_at")),
                outcome=Outcome(doc["outcome"]) if doc.get("outcome") else None,
                http_status=doc.get("http_status"),
                error=doc.get("error"),
                duration_ms=doc.get("duration_ms"),
                response_excerpt=doc.get("response_excerpt"),
                fencing_token=doc.get("fencing_token"),
            )
        )
    return attempts


def execution_from_item(item: ExecutionItem) -> Execution:
    return Execution(
        id=item.id,
        tenant=item.tenant,
        scheduled_for=item.scheduled_for,
        due_at=item.due_at,
        trigger=Trigger(item.trigger),
        target=target_from_doc(item.target),
        payload=item.payload,
        retry=retry_from_doc(item.retry),
        priority=Priority(item.priority),
        created_at=item.created_at,
        state=ExecutionState(item.state),
        schedule_id=item.schedule_id,
        job_id=item.job_id,
        attempt=int(item.attempt),
        fencing_token=int(item.fencing_token),
        started_at=item.started_at,
        finished_at=item.finished_at,
        next_attempt_at=item.next_attempt_at,
        lease_expires_at=item.lease_expires_at,
        reason=item.reason,
        attempts=attempts_from_doc(item.attempts or []),
        schedule_timing_version=(
            int(item.schedule_timing_version) if item.schedule_timing_version is not None else None
        ),
    )


def execution_to_item(execution: Execution) -> ExecutionItem:
    return ExecutionItem(
        id=execution.id,
        tenant=execution.tenant,
        schedule_id=execution.schedule_id,
        job_id=execution.job_id,
        scheduled_for=execution.scheduled_for,
        due_at=execution.due_at,
        trigger=execution.trigger.value,
        state=execution.state.value,
        tenant_state=f"{execution.tenant}#{execution.state.value}",
        attempt=execution.attempt,
        fencing_token=execution.fencing_token,
        created_at=execution.created_at,
        started_at=execution.started_at,
        finished_at=execution.finished_at,
        next_attempt_at=execution.next_attempt_at,
        lease_expires_at=execution.lease_expires_at,
        reason=execution.reason,
        target=target_to_doc(execution.target),
        payload=execution.payload,
        retry=retry_to_doc(execution.retry),
        priority=execution.priority.value,
        attempts=attempts_to_doc(execution.attempts),
        schedule_timing_version=execution.schedule_timing_version,
    )


def job_from_item(item: ScheduleItem) -> Job:
    assert item.run_at is not None and item.execution_id is not None
    return Job(
        id=item.id,
        tenant=item.tenant,
        run_at=item.run_at,
        execution_id=item.execution_id,
        target=target_from_doc(item.target),
        payload=item.payload,
        retry=retry_from_doc(item.retry),
        priority=Priority(item.priority),
        created_at=item.created_at,
        name=item.name,
        idempotency_key=item.idempotency_key,
    )


def job_to_item(job: Job) -> ScheduleItem:
    return ScheduleItem(
        id=job.id,
        kind="job",
        tenant=job.tenant,
        name=job.name,
        run_at=job.run_at,
        execution_id=job.execution_id,
        target=target_to_doc(job.target),
        payload=job.payload,
        retry=retry_to_doc(job.retry),
        priority=job.priority.value,
        idempotency_key=job.idempotency_key,
        created_at=job.created_at,
    )


def tenant_from_item(item: TenantItem) -> Tenant:
    return Tenant(
        id=item.id,
        signing_secrets=list(item.signing_secrets),
        max_concurrency=int(item.max_concurrency),
        max_executions_per_day=int(item.max_executions_per_day),
        max_schedules=int(item.max_schedules),
        priority_weight=int(item.priority_weight),
    )


def tenant_to_item(tenant: Tenant) -> TenantItem:
    return TenantItem(
        id=tenant.id,
        signing_secrets=tenant.signing_secrets,
        max_concurrency=tenant.max_concurrency,
        max_executions_per_day=tenant.max_executions_per_day,
        max_schedules=tenant.max_schedules,
        priority_weight=tenant.priority_weight,
    )


def _dt_doc(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def schedule_to_item(schedule: Schedule) -> ScheduleItem:
    """Queryable fields as attributes; the rest of the definition as one JSON document."""
    definition = {
        "cron": schedule.cron,
        "rate": schedule.rate,
        "timezone": schedule.timezone,
        "start_at": _dt_doc(schedule.start_at),
        "end_at": _dt_doc(schedule.end_at),
        "concurrency": schedule.concurrency.value,
        "misfire": schedule.misfire.value,
        "catch_up_limit": schedule.catch_up_limit,
        "misfire_grace_s": schedule.misfire_grace_s,
        "jitter_s": schedule.jitter_s,
        "description": schedule.description,
        "labels": schedule.labels,
    }
    item = ScheduleItem(
        id=schedule.id,
        kind="schedule",
        tenant=schedule.tenant,
        name=schedule.name,
        target=target_to_doc(schedule.target),
        payload=schedule.payload,
        retry=retry_to_doc(schedule.retry),
        priority=schedule.priority.value,
        created_at=schedule.created_at,
        updated_at=schedule.updated_at,
        version=schedule.version,
        after=schedule.after,
        definition=definition,
        paused=schedule.paused,
        timing_version=schedule.timing_version,
        next_occurrence=schedule.next_occurrence,
    )
    return item


def schedule_from_item(item: ScheduleItem) -> Schedule:
    d = item.definition or {}
    return Schedule(
        id=item.id,
        tenant=item.tenant,
        name=item.name or "",
        target=target_from_doc(item.target),
        created_at=item.created_at,
        updated_at=item.updated_at or item.created_at,
        cron=d.get("cron"),
        rate=d.get("rate"),
        after=item.after,
        timezone=d.get("timezone", "UTC"),
        start_at=_dt(d.get("start_at")),
        end_at=_dt(d.get("end_at")),
        payload=item.payload,
        retry=retry_from_doc(item.retry),
        concurrency=Concurrency(d.get("concurrency", "forbid")),
        misfire=Misfire(d.get("misfire", "run_once")),
        catch_up_limit=int(d.get("catch_up_limit", 10)),
        misfire_grace_s=int(d.get("misfire_grace_s", 60)),
        jitter_s=int(d.get("jitter_s", 0)),
        priority=Priority(item.priority),
        paused=bool(item.paused),
        description=d.get("description"),
        labels=dict(d.get("labels") or {}),
        version=int(item.version),
        timing_version=int(item.timing_version or 1),
        next_occurrence=item.next_occurrence,
    )
