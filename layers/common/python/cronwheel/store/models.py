# mypy: disable-error-code="no-untyped-call"
"""PynamoDB models of the tables in `tables.py`. Table names are bound at runtime by `bind`."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from cronwheel.aws_clients import MAX_ATTEMPTS
from cronwheel.store import tables


class _Unbound:
    """Meta defaults: nothing is bound at import time."""

    table_name: str | None = None
    region: str | None = None
    host: str | None = None
    max_retry_attempts = MAX_ATTEMPTS - 1  # the firing path's retry policy (aws_clients)
    base_backoff_ms = 25


def _index_meta(name: str) -> type:
    return type("Meta", (), {"index_name": name, "projection": AllProjection()})


class ScheduleDueIndex(GlobalSecondaryIndex["ScheduleItem"]):
    Meta = _index_meta("due")
    due_shard = NumberAttribute(hash_key=True)
    next_run_at = UTCDateTimeAttribute(range_key=True)


class ScheduleByTenantNameIndex(GlobalSecondaryIndex["ScheduleItem"]):
    Meta = _index_meta("by_tenant_name")
    tenant = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


class ScheduleByAfterIndex(GlobalSecondaryIndex["ScheduleItem"]):
    Meta = _index_meta("by_after")
    after = UnicodeAttribute(hash_key=True)
    id = UnicodeAttribute(range_key=True)


class ScheduleItem(Model):
    """A recurring schedule or a one-off job (`kind`); both wait for the tick in the due index."""

    class Meta(_Unbound):
        spec = tables.SCHEDULES

    id = UnicodeAttribute(hash_key=True)
    kind = UnicodeAttribute()
    tenant = UnicodeAttribute()
    name = UnicodeAttribute(null=True)
    due_shard = NumberAttribute(null=True)
    next_run_at = UTCDateTimeAttribute(null=True)
    run_at = UTCDateTimeAttribute(null=True)
    execution_id = UnicodeAttribute(null=True)
    target = JSONAttribute()
    payload = JSONAttribute()
    retry = JSONAttribute()
    priority = UnicodeAttribute()
    idempotency_key = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    version = NumberAttribute(default=1)
    # Recurring schedules only:
    after = UnicodeAttribute(null=True)
    definition = JSONAttribute(null=True)
    paused = BooleanAttribute(null=True)
    timing_version = NumberAttribute(null=True)
    next_occurrence = UTCDateTimeAttribute(null=True)
    updated_at = UTCDateTimeAttribute(null=True)

    due = ScheduleDueIndex()
    by_tenant_name = ScheduleByTenantNameIndex()
    by_after = ScheduleByAfterIndex()


class _ExecutionIndex(GlobalSecondaryIndex["ExecutionItem"]):
    scheduled_for = UTCDateTimeAttribute(range_key=True)


class ExecutionByTenantIndex(_ExecutionIndex):
    Meta = _index_meta("by_tenant")
    tenant = UnicodeAttribute(hash_key=True)


class ExecutionByScheduleIndex(_ExecutionIndex):
    Meta = _index_meta("by_schedule")
    schedule_id = UnicodeAttribute(hash_key=True)


class ExecutionByJobIndex(_ExecutionIndex):
    Meta = _index_meta("by_job")
    job_id = UnicodeAttribute(hash_key=True)


class ExecutionByStatusIndex(_ExecutionIndex):
    Meta = _index_meta("by_status")
    tenant_state = UnicodeAttribute(hash_key=True)


class ExecutionSweepIndex(GlobalSecondaryIndex["ExecutionItem"]):
    Meta = _index_meta("sweep")
    sweep_shard = NumberAttribute(hash_key=True)
    sweep_at = UTCDateTimeAttribute(range_key=True)


class ExecutionItem(Model):
    class Meta(_Unbound):
        spec = tables.EXECUTIONS

    id = UnicodeAttribute(hash_key=True)
    tenant = UnicodeAttribute()
    schedule_id = UnicodeAttribute(null=True)
    job_id = UnicodeAttribute(null=True)
    scheduled_for = UTCDateTimeAttribute()
    due_at = UTCDateTimeAttribute()
    trigger = UnicodeAttribute()
    state = UnicodeAttribute()
    tenant_state = UnicodeAttribute()
    attempt = NumberAttribute(default=0)
    fencing_token = NumberAttribute(default=0)
    created_at = UTCDateTimeAttribute()
    started_at = UTCDateTimeAttribute(null=True)
    finished_at = UTCDateTimeAttribute(null=True)
    next_attempt_at = UTCDateTimeAttribute(null=True)
    lease_expires_at = UTCDateTimeAttribute(null=True)
    reason = UnicodeAttribute(null=True)
    target = JSONAttribute()
    payload = JSONAttribute()
    retry = JSONAttribute()
    priority = UnicodeAttribute()
    attempts = JSONAttribute(default=list)
    sweep_shard = NumberAttribute(null=True)
    sweep_at = UTCDateTimeAttribute(null=True)
    expires_at = TTLAttribute(null=True)
    schedule_timing_version = NumberAttribute(null=True)
    # A long job's Step Functions task token while its attempt runs. Set by an update only:
    # the full writes (claim, result, reap) replace the item and drop it.
    task_token = UnicodeAttribute(null=True)

    by_tenant = ExecutionByTenantIndex()
    by_schedule = ExecutionByScheduleIndex()
    by_job = ExecutionByJobIndex()
    by_status = ExecutionByStatusIndex()
    sweep = ExecutionSweepIndex()


class LeaseItem(Model):
    class Meta(_Unbound):
        spec = tables.LEASES

    name = UnicodeAttribute(hash_key=True)
    epoch = NumberAttribute(default=0)
    owner = UnicodeAttribute()
    expires_at = UTCDateTimeAttribute()


class RateBucketItem(Model):
    """A target's rate limit, shared by every dispatcher: the theoretical arrival time of the
    next call (GCRA, a token bucket of depth one). Lives in the leases table."""

    class Meta(_Unbound):
        spec = tables.LEASES

    name = UnicodeAttribute(hash_key=True)
    next_call_at = UTCDateTimeAttribute()


class TenantItem(Model):
    class Meta(_Unbound):
        spec = tables.TENANTS

    id = UnicodeAttribute(hash_key=True)
    signing_secrets = JSONAttribute()
    max_concurrency = NumberAttribute()
    max_executions_per_day = NumberAttribute()
    max_schedules = NumberAttribute()
    priority_weight = NumberAttribute()
    # Executions of the tenant now `running`: changed only together with an execution entering
    # or leaving that state, in one transaction, so it cannot drift.
    running = NumberAttribute(null=True)
    # Executions counted against `max_executions_per_day` on the UTC day `usage_day`.
    usage_day = UnicodeAttribute(null=True)
    usage_executions = NumberAttribute(null=True)


class ApiKeyByTenantIndex(GlobalSecondaryIndex["ApiKeyItem"]):
    Meta = _index_meta("by_tenant")
    tenant = UnicodeAttribute(hash_key=True)
    key_id = UnicodeAttribute(range_key=True)


class ApiKeyItem(Model):
    class Meta(_Unbound):
        spec = tables.API_KEYS

    key_hash = UnicodeAttribute(hash_key=True)
    tenant = UnicodeAttribute()
    key_id = UnicodeAttribute()
    role = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    revoked = BooleanAttribute(default=False)

    by_tenant = ApiKeyByTenantIndex()


class AuditItem(Model):
    class Meta(_Unbound):
        spec = tables.AUDIT

    tenant = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    action = UnicodeAttribute()
    actor_key_id = UnicodeAttribute()
    target_id = UnicodeAttribute()
    at = UTCDateTimeAttribute()
    details = JSONAttribute(default=dict)


class IdempotencyItem(Model):
    class Meta(_Unbound):
        spec = tables.IDEMPOTENCY

    key = UnicodeAttribute(hash_key=True)
    tenant = UnicodeAttribute()
    body_hash = UnicodeAttribute()
    job_id = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    expires_at = TTLAttribute()


ALL_MODELS: tuple[type[Model], ...] = (
    ScheduleItem,
    ExecutionItem,
    LeaseItem,
    RateBucketItem,
    TenantItem,
    ApiKeyItem,
    AuditItem,
    IdempotencyItem,
)


def bind(table_names: dict[str, str] | Any, *, region: str, host: str | None) -> None:
    """Point every model at its deployed table (called when settings are first built)."""
    for model in ALL_MODELS:
        spec: tables.TableSpec = model.Meta.spec  # type: ignore[attr-defined]
        model.Meta.table_name = table_names[spec.logical_name]
        model.Meta.region = region
        model.Meta.host = host
        model._connection = None
