"""Request and response shapes of the REST API (API.md). Validation lives here."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    field_validator,
)

from cronwheel.domain.instants import parse_instant
from cronwheel.domain.model import Backoff, Concurrency, Misfire, Priority, Role
from cronwheel.errors import InvalidArgument

MAX_HEADERS = 50
MAX_LABELS = 50
# As AWS resource tags: at most 50, keys 1-128 characters, values up to 256.
LabelKey = Annotated[StrictStr, Field(min_length=1, max_length=128)]
LabelValue = Annotated[StrictStr, Field(max_length=256)]
TENANT_FIELD = "optional; when given it must be the caller's tenant (another one gets 403)"


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Secrets Manager's own rule for names; an ARN is not accepted, the name is (docs/security.md).
_SECRET_NAME = re.compile(r"[A-Za-z0-9/_+=.@-]{1,512}")
# RFC 9110: a field name is a token; a value holds no control characters (CR/LF above all).
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\xa0-\xff]{0,8192}")
_SECRET_SHAPE = '{"secret": "<Secrets Manager name>"}'
HeaderName = Annotated[str, StringConstraints(strict=True, pattern=f"^{_HEADER_NAME.pattern}$")]
PlainHeaderValue = Annotated[
    str, StringConstraints(strict=True, pattern=f"^{_HEADER_VALUE.pattern}$")
]


class SecretRefIn(_In):
    """A header value kept in AWS Secrets Manager, read when the target is called; requests
    and responses carry only this reference."""

    secret: StrictStr = Field(
        min_length=1,
        max_length=512,
        pattern=f"^{_SECRET_NAME.pattern}$",
        description="Secrets Manager name under cronwheel/<tenant id>/",
    )


def _check_header(name: Any, value: Any) -> None:
    if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid header name")
    if isinstance(value, dict):
        secret = value.get("secret")
        if set(value) != {"secret"} or not isinstance(secret, str):
            raise ValueError(f"header {name}: a secret reference is {_SECRET_SHAPE}")
        if not _SECRET_NAME.fullmatch(secret):
            raise ValueError(
                f"header {name}: a secret name is 1-512 letters, digits and /_+=.@- "
                "(a name, not an ARN)"
            )
    elif not isinstance(value, str):
        raise ValueError(f"header {name}: the value is a string or {_SECRET_SHAPE}")
    elif not _HEADER_VALUE.fullmatch(value):
        # The value itself is never echoed: it may be a credential.
        raise ValueError(f"header {name}: the value has control characters or is too long")


RateLimit = (
    Annotated[
        float,
        Field(
            strict=True,
            gt=0,
            le=10_000,
            description="most calls per second to this target, shared by all dispatchers; "
            "work over the rate waits, it is not dropped",
        ),
    ]
    | None
)


class HttpTargetIn(_In):
    type: Literal["http"]
    url: StrictStr = Field(max_length=2048)
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[HeaderName, PlainHeaderValue | SecretRefIn] = Field(
        default_factory=dict,
        max_length=MAX_HEADERS,
        description=f"plain values, or {_SECRET_SHAPE} to send a secret read at call time",
        json_schema_extra={"additionalProperties": False},
    )
    timeout_s: StrictInt = Field(30, ge=1, le=86400)
    callback: StrictBool = False
    heartbeat_s: StrictInt = Field(
        60,
        ge=1,
        le=3600,
        description="long jobs (callback, or timeout_s over 840): most seconds between "
        "heartbeats (docs/long-jobs.md)",
    )

    rate_limit_per_s: RateLimit = None

    @field_validator("headers", mode="before")
    @classmethod
    def _headers(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for name, item in value.items():
                _check_header(name, item)
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("url must be an absolute http:// or https:// URL")
        return value


class SqsTargetIn(_In):
    type: Literal["sqs"]
    queue_url: StrictStr = Field(min_length=1, max_length=2048)
    rate_limit_per_s: RateLimit = None


TargetIn = Annotated[HttpTargetIn | SqsTargetIn, Field(discriminator="type")]


class RetryIn(_In):
    max_attempts: StrictInt = Field(3, ge=1, le=100)
    backoff: Backoff = Backoff.EXPONENTIAL
    initial_s: StrictInt = Field(30, ge=1, le=86400)
    max_s: StrictInt = Field(3600, ge=1, le=7 * 86400)


class JobIn(_In):
    name: StrictStr | None = Field(None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._-]+$")
    run_at: StrictStr | None = None
    delay_s: StrictInt | None = Field(None, ge=0, le=366 * 86400)
    target: TargetIn
    payload: dict[str, Any] = Field(default_factory=dict)
    retry: RetryIn = Field(default_factory=RetryIn)
    priority: Priority = Priority.NORMAL
    idempotency_key: StrictStr | None = Field(None, min_length=1, max_length=256)
    tenant: StrictStr | None = Field(None, description=TENANT_FIELD)

    def run_at_instant(self) -> datetime | None:
        if self.run_at is not None and self.delay_s is not None:
            raise InvalidArgument("give run_at or delay_s, not both", field="delay_s")
        return parse_instant(self.run_at, field="run_at") if self.run_at is not None else None


class AttemptOut(BaseModel):
    attempt: int
    started_at: str
    finished_at: str | None
    outcome: str | None
    http_status: int | None
    error: str | None
    duration_ms: int | None
    fencing_token: int | None
    response_excerpt: str | None


class ExecutionOut(BaseModel):
    id: str
    tenant: str
    schedule_id: str | None = None
    job_id: str | None = None
    scheduled_for: str
    state: str
    attempt: int
    fencing_token: int
    trigger: str
    priority: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    next_attempt_at: str | None
    reason: str | None
    attempts: list[AttemptOut]


class ExecutionPage(BaseModel):
    items: list[ExecutionOut]
    next_cursor: str | None


class JobOut(BaseModel):
    id: str
    tenant: str
    name: str | None
    execution_id: str
    run_at: str
    state: str
    target: dict[str, Any]
    payload: dict[str, Any]
    retry: dict[str, Any]
    priority: str
    idempotency_key: str | None
    created_at: str


class HealthOut(BaseModel):
    status: Literal["ok"]


class ErrorBody(BaseModel):
    code: str
    message: str
    field: str | None = None


class ErrorOut(BaseModel):
    error: ErrorBody


_NAME_PATTERN = r"^[A-Za-z0-9._-]+$"


class _ScheduleFields(_In):
    cron: StrictStr | None = Field(None, max_length=256)
    rate: StrictStr | None = Field(None, max_length=64)
    after: StrictStr | None = Field(None, min_length=1, max_length=128)
    timezone: StrictStr = Field("UTC", max_length=64)
    start_at: StrictStr | None = None
    end_at: StrictStr | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    retry: RetryIn = Field(default_factory=RetryIn)
    concurrency: Concurrency = Concurrency.FORBID
    misfire: Misfire = Misfire.RUN_ONCE
    catch_up_limit: StrictInt = Field(10, ge=1, le=1000)
    misfire_grace_s: StrictInt = Field(60, ge=0, le=7 * 86400)
    jitter_s: StrictInt = Field(0, ge=0, le=3600)
    priority: Priority = Priority.NORMAL
    paused: StrictBool = False
    description: StrictStr | None = Field(None, max_length=1024)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=MAX_LABELS)
    tenant: StrictStr | None = Field(None, description=TENANT_FIELD)


class ScheduleIn(_ScheduleFields):
    name: StrictStr = Field(min_length=1, max_length=128, pattern=_NAME_PATTERN)
    target: TargetIn


class SchedulePatch(_ScheduleFields):
    name: StrictStr | None = Field(None, min_length=1, max_length=128, pattern=_NAME_PATTERN)
    target: TargetIn | None = None


class ScheduleOut(BaseModel):
    id: str
    tenant: str
    name: str
    cron: str | None
    rate: str | None
    after: str | None
    timezone: str
    start_at: str | None
    end_at: str | None
    target: dict[str, Any]
    payload: dict[str, Any]
    retry: dict[str, Any]
    concurrency: str
    misfire: str
    catch_up_limit: int
    misfire_grace_s: int
    jitter_s: int
    priority: str
    paused: bool
    description: str | None
    labels: dict[str, str]
    version: int
    created_at: str
    updated_at: str
    next_run_at: str | None
    last_run_at: str | None
    last_status: str | None


class SchedulePage(BaseModel):
    items: list[ScheduleOut]
    next_cursor: str | None


class OccurrenceOut(BaseModel):
    scheduled_for: str
    local_time: str


class OccurrencePage(BaseModel):
    items: list[OccurrenceOut]


class PreviewIn(_In):
    cron: StrictStr | None = Field(None, max_length=256)
    rate: StrictStr | None = Field(None, max_length=64)
    timezone: StrictStr = Field("UTC", max_length=64)
    count: StrictInt = Field(5, ge=1, le=100)
    after: StrictStr | None = None
    tenant: StrictStr | None = Field(None, description=TENANT_FIELD)


class LimitsIn(_In):
    max_concurrency: StrictInt | None = Field(None, ge=1, le=100_000)
    max_executions_per_day: StrictInt | None = Field(None, ge=1, le=1_000_000_000)
    max_schedules: StrictInt | None = Field(None, ge=1, le=10_000_000)
    priority_weight: StrictInt | None = Field(None, ge=1, le=1000)
    tenant: StrictStr | None = Field(None, description=TENANT_FIELD)


class ApiKeyIn(_In):
    role: Role
    tenant: StrictStr | None = Field(None, description=TENANT_FIELD)


class LimitsOut(BaseModel):
    max_concurrency: int
    max_executions_per_day: int
    max_schedules: int
    priority_weight: int


class UsageOut(BaseModel):
    running: int
    executions_today: int
    schedules: int


class TenantOut(BaseModel):
    id: str
    limits: LimitsOut
    usage: UsageOut


class SigningSecretOut(BaseModel):
    signing_secret: str


class ApiKeyOut(BaseModel):
    key_id: str
    role: Role
    created_at: str
    revoked: bool


class NewApiKeyOut(ApiKeyOut):
    key: str = Field(description="the API key itself; shown here once, never again")


class ApiKeyPage(BaseModel):
    items: list[ApiKeyOut]
    next_cursor: str | None


class AuditRecordOut(BaseModel):
    action: str
    actor_key_id: str
    target_id: str
    at: str
    details: dict[str, Any]


class AuditPage(BaseModel):
    items: list[AuditRecordOut]
    next_cursor: str | None


class HeartbeatIn(_In):
    fencing_token: StrictInt = Field(ge=0, description="the X-Cronwheel-Fencing-Token received")


class HeartbeatOut(BaseModel):
    lease_expires_at: str


class CompleteIn(_In):
    fencing_token: StrictInt = Field(ge=0, description="the X-Cronwheel-Fencing-Token received")
    status: Literal["succeeded", "failed"]
    output: Any = Field(None, description="kept with the attempt (the first 4 KiB)")
    error: StrictStr | None = Field(None, max_length=2048)
