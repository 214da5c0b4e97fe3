"""Request and response shapes of the REST API (API.md). Validation lives here."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator

from cronwheel.domain.instants import parse_instant
from cronwheel.domain.model import Backoff, Concurrency, Misfire, Priority
from cronwheel.errors import InvalidArgument

MAX_HEADERS = 50
MAX_LABELS = 50


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HttpTargetIn(_In):
    type: Literal["http"]
    url: StrictStr = Field(max_length=2048)
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, StrictStr] = Field(default_factory=dict, max_length=MAX_HEADERS)
    timeout_s: StrictInt = Field(30, ge=1, le=86400)
    callback: StrictBool = False

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
    tenant: StrictStr | None = None

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
    after: StrictStr | None = Field(None, max_length=128)
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
    labels: dict[StrictStr, StrictStr] = Field(default_factory=dict, max_length=MAX_LABELS)
    tenant: StrictStr | None = None


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
