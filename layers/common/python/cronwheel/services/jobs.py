"""Submitting and reading one-off jobs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pynamodb.exceptions import TransactWriteError

from cronwheel.dispatch_queue import DispatchMessage, DispatchQueue
from cronwheel.domain.egress import check_http_egress
from cronwheel.domain.ids import execution_id, new_id
from cronwheel.domain.model import (
    Execution,
    ExecutionState,
    HttpTarget,
    Job,
    Principal,
    Priority,
    RetryPolicy,
    Role,
    Target,
    Trigger,
    check_secret_refs,
)
from cronwheel.errors import Conflict, NotFound, PayloadTooLarge
from cronwheel.services.auth import require_own_tenant, require_role
from cronwheel.services.quotas import admit_execution
from cronwheel.settings import Settings
from cronwheel.store.store import IDEMPOTENCY_WINDOW, Store

MAX_PAYLOAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class JobRequest:
    target: Target
    payload: dict[str, Any]
    retry: RetryPolicy
    priority: Priority
    name: str | None = None
    run_at: datetime | None = None
    delay_s: int | None = None
    idempotency_key: str | None = None
    tenant: str | None = None
    canonical_body: str = ""


@dataclass(frozen=True)
class Submitted:
    job: Job
    execution: Execution
    created: bool


def body_fingerprint(body: dict[str, Any]) -> str:
    return hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def check_target_egress(target: Target, settings: Settings) -> None:
    if isinstance(target, HttpTarget):
        check_http_egress(target.url, allow_private=settings.allow_private_egress)


def check_payload_size(payload: dict[str, Any]) -> None:
    size = len(json.dumps(payload, separators=(",", ":")).encode())
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge(
            f"payload is {size} bytes serialised; the limit is {MAX_PAYLOAD_BYTES}", field="payload"
        )


class JobService:
    def __init__(self, store: Store, queue: DispatchQueue, settings: Settings) -> None:
        self._store = store
        self._queue = queue
        self._settings = settings

    def submit(self, principal: Principal, request: JobRequest, now: datetime) -> Submitted:
        """Create a job and its execution. Due within the lookahead, it is enqueued right away;
        later, it waits in the due index for the tick. A repeated idempotency key returns the
        original job."""
        require_own_tenant(principal, request.tenant)
        require_role(principal, Role.OPERATOR)
        check_payload_size(request.payload)
        check_target_egress(request.target, self._settings)
        check_secret_refs(request.target, principal.tenant)
        fingerprint = body_fingerprint(json.loads(request.canonical_body or "{}"))
        if request.idempotency_key is not None:
            earlier = self._earlier_submission(principal, request.idempotency_key, fingerprint, now)
            if earlier is not None:
                return earlier

        admit_execution(self._store, principal.tenant, now)
        if request.run_at is not None:
            run_at = request.run_at
        else:
            run_at = now + timedelta(seconds=request.delay_s or 0)
        job_id = new_id("job")
        enqueue_now = run_at <= now + timedelta(seconds=self._settings.lookahead_s)
        job = Job(
            id=job_id,
            tenant=principal.tenant,
            run_at=run_at,
            execution_id=execution_id(job_id, run_at, Trigger.JOB),
            target=request.target,
            payload=request.payload,
            retry=request.retry,
            priority=request.priority,
            created_at=now,
            name=request.name,
            idempotency_key=request.idempotency_key,
        )
        execution = Execution(
            id=job.execution_id,
            tenant=job.tenant,
            job_id=job.id,
            scheduled_for=run_at,
            due_at=run_at,
            trigger=Trigger.JOB,
            target=job.target,
            payload=job.payload,
            retry=job.retry,
            priority=job.priority,
            created_at=now,
            state=ExecutionState.QUEUED if enqueue_now else ExecutionState.SCHEDULED,
        )
        try:
            self._store.create_job(job, execution, body_hash=fingerprint, now=now)
        except TransactWriteError as error:
            if request.idempotency_key is None or not Store.first_condition_failed(error):
                raise
            # Lost a race with the same key: answer as the winner did.
            earlier = self._earlier_submission(principal, request.idempotency_key, fingerprint, now)
            if earlier is None:
                raise
            return earlier
        if enqueue_now:
            # If this send fails, the sweeper re-enqueues the queued execution after its grace.
            self._queue.send([DispatchMessage(execution.id, 0, run_at)], now)
        return Submitted(job, execution, created=True)

    def _earlier_submission(
        self, principal: Principal, key: str, fingerprint: str, now: datetime
    ) -> Submitted | None:
        record = self._store.get_idempotency(principal.tenant, key)
        if record is None or record.created_at + IDEMPOTENCY_WINDOW < now:
            return None
        if record.body_hash != fingerprint:
            raise Conflict(
                "idempotency_key was already used with a different request body",
                field="idempotency_key",
            )
        job = self._store.get_job(record.job_id)
        execution = self._store.get_execution(job.execution_id, consistent=True) if job else None
        if job is None or execution is None:
            return None
        return Submitted(job, execution, created=False)

    def get(self, principal: Principal, job_id: str) -> tuple[Job, Execution | None]:
        job = self._store.get_job(job_id)
        if job is None or job.tenant != principal.tenant:
            raise NotFound(f"job {job_id} not found")
        return job, self._store.get_execution(job.execution_id)
