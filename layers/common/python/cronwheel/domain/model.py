"""The scheduler's vocabulary: states, policies, targets, jobs and executions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from cronwheel.errors import InvalidArgument


class ExecutionState(StrEnum):
    SCHEDULED = "scheduled"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRY_SCHEDULED = "retry_scheduled"
    DEAD = "dead"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL

    @property
    def is_claimable(self) -> bool:
        """A worker may start an attempt from this state."""
        return self in (ExecutionState.QUEUED, ExecutionState.RETRY_SCHEDULED)


_TERMINAL = frozenset(
    {
        ExecutionState.SUCCEEDED,
        ExecutionState.DEAD,
        ExecutionState.CANCELLED,
        ExecutionState.SKIPPED,
    }
)


class Trigger(StrEnum):
    SCHEDULE = "schedule"
    MANUAL = "manual"
    DEPENDENCY = "dependency"
    CATCH_UP = "catch_up"
    JOB = "job"


class Priority(StrEnum):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


class Backoff(StrEnum):
    EXPONENTIAL = "exponential"
    LINEAR = "linear"
    FIXED = "fixed"


class Role(StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    def allows(self, needed: Role) -> bool:
        order = (Role.VIEWER, Role.OPERATOR, Role.ADMIN)
        return order.index(self) >= order.index(needed)


class Concurrency(StrEnum):
    FORBID = "forbid"
    ALLOW = "allow"
    REPLACE = "replace"


class Misfire(StrEnum):
    SKIP = "skip"
    RUN_ONCE = "run_once"
    CATCH_UP = "catch_up"


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    backoff: Backoff = Backoff.EXPONENTIAL
    initial_s: int = 30
    max_s: int = 3600


# Secrets Manager names a tenant may reference start with cronwheel/<tenant id>/ (docs/security.md).
SECRET_NAME_PREFIX = "cronwheel/"


@dataclass(frozen=True)
class SecretRef:
    """A header value kept in Secrets Manager: only the name is stored or shown; the value
    is read when the target is called."""

    name: str

    @staticmethod
    def prefix_for(tenant: str) -> str:
        return f"{SECRET_NAME_PREFIX}{tenant}/"

    def belongs_to(self, tenant: str) -> bool:
        prefix = self.prefix_for(tenant)
        return self.name.startswith(prefix) and len(self.name) > len(prefix)


HeaderValue = str | SecretRef


@dataclass(frozen=True)
class HttpTarget:
    url: str
    method: str = "POST"
    headers: dict[str, HeaderValue] = field(default_factory=dict)
    timeout_s: int = 30
    callback: bool = False
    type: str = "http"
    # Long jobs only (callback, or timeout_s over 840): the most seconds between heartbeats.
    heartbeat_s: int = 60
    # Most calls per second to this target, shared by every dispatcher (None: no limit).
    rate_limit_per_s: float | None = None

    @property
    def secret_refs(self) -> dict[str, SecretRef]:
        """The headers whose values are read from Secrets Manager, by header name."""
        return {k: v for k, v in self.headers.items() if isinstance(v, SecretRef)}


@dataclass(frozen=True)
class SqsTarget:
    queue_url: str
    type: str = "sqs"
    rate_limit_per_s: float | None = None


Target = HttpTarget | SqsTarget


def check_secret_refs(target: Target, tenant: str) -> None:
    """Raise InvalidArgument when a header references a secret outside the tenant's prefix."""
    if not isinstance(target, HttpTarget):
        return
    for header, ref in sorted(target.secret_refs.items()):
        if not ref.belongs_to(tenant):
            raise InvalidArgument(
                f"header {header} references secret {ref.name!r}, but this tenant may only "
                f"reference secrets named {SecretRef.prefix_for(tenant)}<name>",
                field=f"target.headers.{header}",
            )


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant comes from the credential, never from a request body."""

    tenant: str
    role: Role
    key_id: str


@dataclass
class Attempt:
    attempt: int
    started_at: datetime
    finished_at: datetime | None = None
    outcome: Outcome | None = None
    http_status: int | None = None
    error: str | None = None
    duration_ms: int | None = None
    response_excerpt: str | None = None
    fencing_token: int | None = None


@dataclass
class Execution:
    id: str
    tenant: str
    scheduled_for: datetime
    due_at: datetime
    trigger: Trigger
    target: Target
    payload: dict[str, Any]
    retry: RetryPolicy
    priority: Priority
    created_at: datetime
    state: ExecutionState = ExecutionState.SCHEDULED
    schedule_id: str | None = None
    job_id: str | None = None
    attempt: int = 0
    fencing_token: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    next_attempt_at: datetime | None = None
    lease_expires_at: datetime | None = None
    reason: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    schedule_timing_version: int | None = None

    @property
    def source_id(self) -> str:
        return self.schedule_id or self.job_id or ""

    @property
    def next_due_at(self) -> datetime:
        """When the next attempt may start: the occurrence for the first, the backoff after."""
        if self.state is ExecutionState.RETRY_SCHEDULED and self.next_attempt_at is not None:
            return self.next_attempt_at
        return self.due_at


@dataclass
class Job:
    id: str
    tenant: str
    run_at: datetime
    execution_id: str
    target: Target
    payload: dict[str, Any]
    retry: RetryPolicy
    priority: Priority
    created_at: datetime
    name: str | None = None
    idempotency_key: str | None = None


@dataclass
class Tenant:
    id: str
    signing_secrets: list[str]
    max_concurrency: int = 100
    max_executions_per_day: int = 1_000_000
    max_schedules: int = 10_000
    priority_weight: int = 1

    @property
    def signing_secret(self) -> str:
        return self.signing_secrets[0]
