"""The dispatcher: re-check, claim (fencing token + 1), call the target, record the result."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from aws_lambda_powertools import Logger

from cronwheel.clock import Clock
from cronwheel.dispatch_queue import DispatchMessage, DispatchQueue
from cronwheel.domain import lifecycle
from cronwheel.domain.delivery import build_delivery, delivery_document
from cronwheel.domain.egress import check_http_egress
from cronwheel.domain.lifecycle import AttemptResult
from cronwheel.domain.long_jobs import is_long_job
from cronwheel.domain.model import (
    Concurrency,
    Execution,
    ExecutionState,
    HttpTarget,
    Outcome,
    SqsTarget,
    Tenant,
    Trigger,
)
from cronwheel.domain.pacing import FairPacer
from cronwheel.errors import CronwheelError
from cronwheel.services.long_jobs import LongJobs, LongJobStep
from cronwheel.services.recording import end_without_attempt, record_attempt_end
from cronwheel.settings import Settings
from cronwheel.store.store import ClaimResult, Store
from cronwheel.targets.http import HttpCaller
from cronwheel.targets.secrets import SecretResolver, SecretUnavailable
from cronwheel.targets.sqs import SqsSender

logger = Logger(child=True)

# A message may arrive a little before its due time (SQS delays are whole seconds);
# the dispatcher waits that out instead of sending it around again.
MAX_WAIT_S = 2.0
_TENANT_TTL_S = 60.0
THROTTLE_RETRY_S = 1


@dataclass(frozen=True)
class DispatchOutcome:
    execution_id: str
    tenant: str | None
    state: ExecutionState | None
    lag_ms: int | None = None
    note: str = ""
    attempt: int = 0

    @property
    def attempt_ended(self) -> bool:
        return self.tenant is not None and self.state is not None and self.attempt > 0


def rate_bucket(execution: Execution) -> str:
    """One bucket per tenant and target address, whichever job or schedule calls it."""
    target = execution.target
    address = target.url if isinstance(target, HttpTarget) else target.queue_url
    return f"rate#{execution.tenant}#{hashlib.sha256(address.encode()).hexdigest()[:32]}"


class Dispatcher:
    def __init__(
        self,
        store: Store,
        queue: DispatchQueue,
        http: HttpCaller,
        sqs: SqsSender,
        settings: Settings,
        clock: Clock,
        secrets: SecretResolver | None = None,
    ) -> None:
        self._secrets = secrets or SecretResolver(settings.region, settings.endpoint_url)
        self._store = store
        self._queue = queue
        self._http = http
        self._sqs = sqs
        self._settings = settings
        self._clock = clock
        self._tenants: dict[str, tuple[float, Tenant]] = {}
        rate = settings.dispatch_rate_per_s
        self._pacer = FairPacer(rate) if rate > 0 else None
        self._long_jobs = LongJobs(store, queue, settings, clock)

    def prefetch(self, messages: Sequence[DispatchMessage]) -> dict[str, Execution]:
        """Read a batch's executions in one call before handling them one by one."""
        return self._store.get_executions([m.execution_id for m in messages])

    def handle(
        self,
        message: DispatchMessage,
        prefetched: dict[str, Execution] | None = None,
        later: list[DispatchMessage] | None = None,
    ) -> DispatchOutcome:
        """Handle one message. Messages to send again (early, paced, rate-limited, throttled)
        go to `later` when given, for the caller to send in one batch (`send_later`); else at
        once. A crash before that send loses nothing: the sweeper re-sends queued work."""
        if later is not None:
            return self._handle(message, prefetched, later)
        resend: list[DispatchMessage] = []
        try:
            return self._handle(message, prefetched, resend)
        finally:
            self.send_later(resend)

    def _handle(
        self,
        message: DispatchMessage,
        prefetched: dict[str, Execution] | None,
        later: list[DispatchMessage],
    ) -> DispatchOutcome:
        if message.task_token is not None:
            # The long-job state machine hands over a running attempt (services/long_jobs.py).
            return _long_job(self._long_jobs.deliver(message, self._call_long_job_target))
        execution = (prefetched or {}).pop(message.execution_id, None) or self._store.get_execution(
            message.execution_id, consistent=True
        )
        if execution is None:
            return DispatchOutcome(message.execution_id, None, None, note="unknown execution")
        if not execution.state.is_claimable or execution.fencing_token != message.token:
            # A duplicate or stale message: the attempt it asked for has happened or moved on.
            return DispatchOutcome(execution.id, execution.tenant, execution.state, note="stale")

        # A paced message comes back for its turn; only the due time is waited out to the
        # fraction of a second (never early), a turn a moment early is good enough.
        turn = max(execution.next_due_at, message.due_at) if message.paced else None
        if turn is not None and (turn - self._clock.now()).total_seconds() > MAX_WAIT_S:
            later.append(replace(message, due_at=turn))
            return DispatchOutcome(execution.id, execution.tenant, execution.state, note="early")
        wait_s = (execution.next_due_at - self._clock.now()).total_seconds()
        if wait_s > MAX_WAIT_S:
            later.append(replace(message, due_at=execution.next_due_at))
            return DispatchOutcome(execution.id, execution.tenant, execution.state, note="early")
        if not message.paced and execution.attempt == 0:
            deferred = self._pace(execution, later)
            if deferred is not None:
                return deferred
        self._clock.sleep(wait_s)
        if execution.schedule_id is not None:
            stopped = self._revalidate(execution)
            if stopped is not None:
                return stopped
        limited = self._respect_rate_limit(execution, later)
        if limited is not None:
            return limited
        return self._run_attempt(execution, later)

    def _pace(self, execution: Execution, later: list[DispatchMessage]) -> DispatchOutcome | None:
        """A first attempt beyond its tenant's fair share of the dispatch rate waits for its
        turn (see `domain/pacing.py`): its message comes back then, already admitted."""
        if self._pacer is None:
            return None
        now = self._clock.now()
        tenant = self._tenant(execution.tenant)
        start = self._pacer.start_at(tenant.id, tenant.priority_weight, execution.priority, now)
        if (start - now).total_seconds() <= MAX_WAIT_S:
            return None
        return self._defer(execution, start, "paced", later)

    def _respect_rate_limit(
        self, execution: Execution, later: list[DispatchMessage]
    ) -> DispatchOutcome | None:
        """Space calls to a rate-limited target across all dispatchers: wait for a slot a
        moment away, or come back when the next one is free. Either way no attempt is used."""
        rate = execution.target.rate_limit_per_s
        if rate is None:
            return None
        now = self._clock.now()
        start, reserved = self._store.reserve_call(
            rate_bucket(execution),
            now,
            interval=timedelta(seconds=1 / rate),
            max_wait=timedelta(seconds=MAX_WAIT_S),
        )
        if not reserved:
            return self._defer(execution, start, "rate_limited", later)
        self._clock.sleep((start - now).total_seconds())
        return None

    def _defer(
        self, execution: Execution, start: datetime, note: str, later: list[DispatchMessage]
    ) -> DispatchOutcome:
        """Send the execution's message again for `start`, marked as already admitted."""
        grace = timedelta(seconds=self._settings.delivery_grace_s)
        if start + timedelta(seconds=MAX_WAIT_S) >= execution.next_due_at + grace:
            # Keep the sweeper from taking the wait for a lost message.
            self._store.transition(
                execution,
                expect_state=execution.state,
                expect_token=execution.fencing_token,
                sweep_at=start + grace,
            )
        later.append(DispatchMessage(execution.id, execution.fencing_token, start, paced=True))
        return DispatchOutcome(execution.id, execution.tenant, execution.state, note=note)

    def send_later(self, messages: list[DispatchMessage]) -> None:
        """Send what `handle` set aside, in batches of ten."""
        if messages:
            self._queue.send(messages, self._clock.now())

    def _revalidate(self, execution: Execution) -> DispatchOutcome | None:
        """A schedule deleted, paused or re-timed since this execution was enqueued stops it,
        and so does its overlap policy; the execution then ends with the reason."""
        assert execution.schedule_id is not None
        schedule = self._store.get_schedule(execution.schedule_id)
        recurring = execution.trigger in (Trigger.SCHEDULE, Trigger.CATCH_UP)
        if schedule is None:
            return self._stop(execution, ExecutionState.CANCELLED, "schedule_deleted")
        if recurring and schedule.paused:
            return self._stop(execution, ExecutionState.SKIPPED, "paused")
        if recurring and execution.schedule_timing_version not in (None, schedule.timing_version):
            return self._stop(execution, ExecutionState.SKIPPED, "superseded")
        if schedule.concurrency is Concurrency.ALLOW:
            return None
        running = [
            e
            for e in self._store.executions_of(schedule.id, {ExecutionState.RUNNING}, limit=10)
            if e.id != execution.id
        ]
        if not running:
            return None
        if schedule.concurrency is Concurrency.FORBID:
            return self._stop(
                execution, ExecutionState.SKIPPED, f"overlap: {running[0].id} is still running"
            )
        for older in running:
            # Its worker may still finish, but its result is rejected: it no longer holds the token.
            end_without_attempt(
                self._store,
                self._settings,
                older,
                ExecutionState.CANCELLED,
                f"replaced by {execution.id}",
                self._clock.now(),
            )
        return None

    def _stop(self, execution: Execution, state: ExecutionState, reason: str) -> DispatchOutcome:
        end_without_attempt(
            self._store, self._settings, execution, state, reason, self._clock.now()
        )
        return DispatchOutcome(execution.id, execution.tenant, state, note=reason)

    def _run_attempt(self, execution: Execution, later: list[DispatchMessage]) -> DispatchOutcome:
        tenant = self._tenant(execution.tenant)
        started = self._clock.now()
        lease = timedelta(seconds=self._timeout_s(execution) + self._settings.worker_lease_slack_s)
        running = lifecycle.claim(execution, started, lease)
        claimed = self._store.claim(
            running,
            expect_state=execution.state,
            expect_token=execution.fencing_token,
            max_concurrency=tenant.max_concurrency,
        )
        if claimed is ClaimResult.NO_SLOT:
            # Over the tenant's limit: wait and try again, without using up an attempt.
            retry_at = started + timedelta(seconds=THROTTLE_RETRY_S)
            later.append(
                DispatchMessage(execution.id, execution.fencing_token, retry_at, paced=True)
            )
            return DispatchOutcome(
                execution.id, execution.tenant, execution.state, note="throttled"
            )
        if claimed is ClaimResult.LOST:
            return DispatchOutcome(execution.id, execution.tenant, None, note="claimed elsewhere")
        if is_long_job(running.target):
            return _long_job(self._long_jobs.start(running))
        lag_ms = int((started - execution.next_due_at).total_seconds() * 1000)
        result = self._call_target(running, started, tenant.signing_secret)
        finished = lifecycle.complete(running, self._clock.now(), result)
        if not self._record(running, finished):
            return DispatchOutcome(execution.id, execution.tenant, None, lag_ms, note="fenced out")
        return DispatchOutcome(
            execution.id, execution.tenant, finished.state, lag_ms, attempt=running.attempt
        )

    def _record(self, running: Execution, finished: Execution) -> bool:
        """Write the result; dependents of a success and the event of a `dead` end follow in
        `record_attempt_end`, recoverable by the sweeper if this process dies after the write."""
        return record_attempt_end(
            self._store,
            self._queue,
            self._settings,
            finished=finished,
            running_token=running.fencing_token,
            now=self._clock.now(),
        )

    def _call_long_job_target(self, execution: Execution, now: datetime) -> AttemptResult:
        return self._call_target(execution, now, self._tenant(execution.tenant).signing_secret)

    def _timeout_s(self, execution: Execution) -> int:
        return execution.target.timeout_s if isinstance(execution.target, HttpTarget) else 30

    def _call_target(self, execution: Execution, now: datetime, secret: str) -> AttemptResult:
        target = execution.target
        if isinstance(target, SqsTarget):
            started = time.monotonic()
            body = json.dumps(delivery_document(execution), separators=(",", ":"))
            error = self._sqs.send(
                target.queue_url,
                body,
                {"execution_id": execution.id, "fencing_token": str(execution.fencing_token)},
            )
            elapsed = int((time.monotonic() - started) * 1000)
            if error is None:
                return AttemptResult(Outcome.SUCCEEDED, duration_ms=elapsed)
            return AttemptResult(Outcome.FAILED, error=error, duration_ms=elapsed)
        try:
            # Again at call time: the name may resolve elsewhere than when the target was saved.
            check_http_egress(target.url, allow_private=self._settings.allow_private_egress)
        except CronwheelError as refused:
            return AttemptResult(Outcome.FAILED, error=f"egress refused: {refused.message}")
        try:
            # Read now, used for this call only: a value is never stored, logged or returned.
            headers = self._secrets.resolve_headers(target.headers)
        except SecretUnavailable as unavailable:
            return AttemptResult(Outcome.FAILED, error=str(unavailable))
        delivery = build_delivery(execution, secret, now, headers)
        result = self._http.call(
            method=target.method,
            url=target.url,
            headers=delivery.headers,
            body=delivery.body,
            timeout_s=target.timeout_s,
        )
        if result.ok:
            outcome = Outcome.SUCCEEDED
            error = None
        elif result.timed_out:
            outcome, error = Outcome.TIMEOUT, f"timeout: {result.error}"
        else:
            outcome = Outcome.FAILED
            error = result.error or f"target answered HTTP {result.status}"
        return AttemptResult(
            outcome,
            http_status=result.status,
            error=error,
            duration_ms=result.duration_ms,
            response_excerpt=result.excerpt,
        )

    def _tenant(self, tenant_id: str) -> Tenant:
        """Limits and signing secret, cached for a minute (a warm Lambda keeps them)."""
        cached = self._tenants.get(tenant_id)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        tenant = self._store.get_tenant(tenant_id)
        if tenant is None:
            raise LookupError(f"tenant {tenant_id} not found")
        self._tenants[tenant_id] = (time.monotonic() + _TENANT_TTL_S, tenant)
        return tenant


def _long_job(step: LongJobStep) -> DispatchOutcome:
    return DispatchOutcome(
        step.execution_id, step.tenant, step.state, note=step.note, attempt=step.attempt
    )
