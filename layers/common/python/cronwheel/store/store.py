"""The only module that talks to DynamoDB. Every state change is a conditional write."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from aws_lambda_powertools import Logger
from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, PutError, TransactWriteError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.transactions import TransactWrite

from cronwheel.aws_clients import MAX_ATTEMPTS
from cronwheel.domain.ids import shard_of
from cronwheel.domain.model import Execution, ExecutionState, Job, Principal, Role, Tenant
from cronwheel.domain.quota import quota_day
from cronwheel.domain.schedule import FiringPlan, Schedule
from cronwheel.errors import AlreadyExists, InvalidArgument
from cronwheel.settings import Settings
from cronwheel.store import codec
from cronwheel.store.models import (
    ApiKeyItem,
    AuditItem,
    ExecutionItem,
    IdempotencyItem,
    LeaseItem,
    RateBucketItem,
    ScheduleItem,
    TenantItem,
    bind,
)

logger = Logger(child=True)

# DynamoDB allows 100 actions per transaction: one lease check plus 49 pairs of updates.
_PAIRS_PER_TRANSACTION = 49
IDEMPOTENCY_WINDOW = timedelta(hours=24)


class ClaimResult(Enum):
    CLAIMED = "claimed"
    NO_SLOT = "no_slot"  # the tenant is at max_concurrency: try again shortly
    LOST = "lost"  # someone else moved the execution first


class LeaseLost(Exception):
    """The shard lease was taken over: the holder must stop writing."""


class IdempotencyKeyTaken(Exception):
    """A live record already holds this idempotency key."""


@dataclass(frozen=True)
class Lease:
    name: str
    owner: str
    epoch: int
    expires_at: datetime
    took_over: bool = False  # from a holder that never released it (crashed or paused)


@dataclass(frozen=True)
class DueItem:
    """A due-index entry: what the tick fires."""

    id: str
    kind: str
    tenant: str
    next_run_at: datetime
    execution_id: str | None
    schedule: Schedule | None = None


@dataclass(frozen=True)
class DailyUsage:
    """A tenant's `max_executions_per_day` and the executions counted against it today."""

    limit: int
    used: int

    @property
    def room(self) -> int:
        return max(0, self.limit - self.used)


@dataclass(frozen=True)
class ApiKeyRecord:
    tenant: str
    key_id: str
    role: Role
    revoked: bool


@dataclass(frozen=True)
class ApiKeyListing:
    key_id: str
    role: Role
    created_at: datetime
    revoked: bool


@dataclass(frozen=True)
class IdempotencyRecord:
    body_hash: str
    job_id: str
    created_at: datetime


@dataclass(frozen=True)
class ExecutionQuery:
    tenant: str
    schedule_id: str | None = None
    job_id: str | None = None
    state: ExecutionState | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 50
    cursor: str | None = None


@dataclass(frozen=True)
class Page:
    items: list[Execution]
    next_cursor: str | None


@dataclass(frozen=True)
class LeaseExtension:
    """A running attempt's lease, moved; with its long job's task token when it has one."""

    lease_expires_at: datetime
    task_token: str | None


def _encode_cursor(key: dict[str, Any] | None) -> str | None:
    if not key:
        return None
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode()


def _decode_cursor(cursor: str) -> dict[str, Any]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError):
        raise InvalidArgument("cursor is not one this API returned", field="cursor") from None
    if not isinstance(decoded, dict):
        raise InvalidArgument("cursor is not one this API returned", field="cursor")
    return decoded


def _reason_codes(error: TransactWriteError) -> list[str]:
    reasons = error.cancellation_reasons or []
    return sorted({r.code for r in reasons if r is not None}) or [str(error.cause_response_code)]


def _condition_failed(error: UpdateError) -> bool:
    return error.cause_response_code == "ConditionalCheckFailedException"


def _idempotency_pk(tenant: str, key: str) -> str:
    return f"{tenant}#{hashlib.sha256(key.encode()).hexdigest()}"


class Store:
    def __init__(self, settings: Settings) -> None:
        bind(settings.table_names, region=settings.region, host=settings.endpoint_url)
        self._settings = settings
        self._connection = Connection(
            region=settings.region,
            host=settings.endpoint_url,
            max_retry_attempts=MAX_ATTEMPTS - 1,
        )

    # -- tenants and keys -------------------------------------------------------------------

    def put_tenant(self, tenant: Tenant) -> None:
        """Create (or wholly replace) a tenant; use `update_tenant` for a live one."""
        codec.tenant_to_item(tenant).save()

    def update_tenant(self, tenant: Tenant) -> None:
        """Change limits and secrets without touching the live `running` count."""
        TenantItem(id=tenant.id).update(
            actions=[
                TenantItem.signing_secrets.set(tenant.signing_secrets),
                TenantItem.max_concurrency.set(tenant.max_concurrency),
                TenantItem.max_executions_per_day.set(tenant.max_executions_per_day),
                TenantItem.max_schedules.set(tenant.max_schedules),
                TenantItem.priority_weight.set(tenant.priority_weight),
            ],
            condition=TenantItem.id.exists(),
        )

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        try:
            return codec.tenant_from_item(TenantItem.get(tenant_id, consistent_read=True))
        except DoesNotExist:
            return None

    def put_api_key(
        self, *, tenant: str, key_hash: str, key_id: str, role: Role, now: datetime
    ) -> None:
        ApiKeyItem(
            key_hash=key_hash, tenant=tenant, key_id=key_id, role=role.value, created_at=now
        ).save()

    def find_api_key(self, key_hash: str) -> ApiKeyRecord | None:
        try:
            item = ApiKeyItem.get(key_hash)
        except DoesNotExist:
            return None
        return ApiKeyRecord(item.tenant, item.key_id, Role(item.role), bool(item.revoked))

    def list_api_keys(self, tenant: str) -> list[ApiKeyListing]:
        return [
            ApiKeyListing(item.key_id, Role(item.role), item.created_at, bool(item.revoked))
            for item in ApiKeyItem.by_tenant.query(tenant)
        ]

    def revoke_api_key(self, tenant: str, key_id: str) -> bool:
        for item in ApiKeyItem.by_tenant.query(tenant, ApiKeyItem.key_id == key_id):
            item.update(actions=[ApiKeyItem.revoked.set(True)])
            return True
        return False

    def running_slots(self, tenant: str) -> int:
        """Concurrency slots the tenant holds now (its `running` executions)."""
        try:
            item = TenantItem.get(tenant, consistent_read=True, attributes_to_get=["running"])
        except DoesNotExist:
            return 0
        return int(item.running or 0)

    def count_schedules(self, tenant: str) -> int:
        return int(
            ScheduleItem.by_tenant_name.count(
                tenant, filter_condition=ScheduleItem.kind == "schedule"
            )
        )

    # -- target rate limits ------------------------------------------------------------------

    def reserve_call(
        self, bucket: str, now: datetime, interval: timedelta, max_wait: timedelta
    ) -> tuple[datetime, bool]:
        """The next time a call to the bucket's target may start, and whether it is now
        reserved for the caller. Not reserved when it is more than `max_wait` away (the caller
        comes back then). Calls are spaced `interval` apart across every dispatcher."""
        for _ in range(8):
            try:
                item = RateBucketItem.get(bucket, consistent_read=True)
                previous: datetime | None = item.next_call_at
            except DoesNotExist:
                previous = None
            start = max(now, previous) if previous else now
            if start - now > max_wait:
                return start, False
            condition = (
                RateBucketItem.name.does_not_exist()
                if previous is None
                else RateBucketItem.next_call_at == previous
            )
            try:
                RateBucketItem(name=bucket, next_call_at=start + interval).save(condition=condition)
                return start, True
            except PutError as error:
                if error.cause_response_code != "ConditionalCheckFailedException":
                    raise
        # Lost every race: come back in a moment rather than spin.
        return now + max_wait + interval, False

    # -- quotas ------------------------------------------------------------------------------

    def take_daily_execution(self, tenant: str, now: datetime) -> bool:
        """Count one execution against today's quota if it fits under the tenant's
        `max_executions_per_day`; False, and nothing counted, when it does not. Exact under
        concurrency: the limit is compared inside the conditional write."""
        day = quota_day(now)
        for _ in range(3):
            try:
                TenantItem(id=tenant).update(
                    actions=[TenantItem.usage_executions.add(1)],
                    condition=(TenantItem.usage_day == day)
                    & (TenantItem.usage_executions < TenantItem.max_executions_per_day),
                )
                return True
            except UpdateError as error:
                if not _condition_failed(error):
                    raise
            try:
                # A new day (or the first execution ever): start the count afresh.
                TenantItem(id=tenant).update(
                    actions=[TenantItem.usage_day.set(day), TenantItem.usage_executions.set(1)],
                    condition=(TenantItem.max_executions_per_day >= 1)
                    & (TenantItem.usage_day.does_not_exist() | (TenantItem.usage_day != day)),
                )
                return True
            except UpdateError as error:
                if not _condition_failed(error):
                    raise
            # Both refused. Either today's count is full, or another request started the day
            # between our two writes: look, and only then give up.
            usage = self.daily_usage(tenant, now)
            if usage is None or usage.room == 0:
                return False
        return False

    def add_daily_executions(self, tenant: str, count: int, now: datetime) -> None:
        """Count executions that were admitted elsewhere (a schedule's occurrences)."""
        day = quota_day(now)
        for _ in range(3):
            try:
                TenantItem(id=tenant).update(
                    actions=[TenantItem.usage_executions.add(count)],
                    condition=TenantItem.usage_day == day,
                )
                return
            except UpdateError as error:
                if not _condition_failed(error):
                    raise
            try:
                TenantItem(id=tenant).update(
                    actions=[
                        TenantItem.usage_day.set(day),
                        TenantItem.usage_executions.set(count),
                    ],
                    condition=TenantItem.id.exists()
                    & (TenantItem.usage_day.does_not_exist() | (TenantItem.usage_day != day)),
                )
                return
            except UpdateError as error:
                if not _condition_failed(error):
                    raise

    def daily_usage(self, tenant: str, now: datetime) -> DailyUsage | None:
        """The tenant's daily quota and what today has used of it, in one read."""
        try:
            item = TenantItem.get(
                tenant,
                consistent_read=True,
                attributes_to_get=["max_executions_per_day", "usage_day", "usage_executions"],
            )
        except DoesNotExist:
            return None
        used = int(item.usage_executions or 0) if item.usage_day == quota_day(now) else 0
        return DailyUsage(limit=int(item.max_executions_per_day), used=used)

    # -- jobs --------------------------------------------------------------------------------

    def create_job(
        self,
        job: Job,
        execution: Execution,
        *,
        body_hash: str | None,
        now: datetime,
    ) -> None:
        """Write the job and its execution; with an idempotency key, atomically with its record.

        A job whose execution is still `scheduled` waits in the due index; one already `queued`
        is left to its message. Either way the execution carries a sweep time, so the sweeper
        finds it if its message or its tick never comes.
        """
        job_item = codec.job_to_item(job)
        if execution.state is ExecutionState.SCHEDULED:
            job_item.due_shard = shard_of(job.id, self._settings.shards)
            job_item.next_run_at = job.run_at
        execution_item = self._with_sweep(codec.execution_to_item(execution))
        if job.idempotency_key is None or body_hash is None:
            # Fresh ids cannot collide, so no transaction is needed: the execution goes first,
            # and should the job item never follow, the sweeper still runs the execution.
            execution_item.save()
            job_item.save()
            return
        record = IdempotencyItem(
            key=_idempotency_pk(job.tenant, job.idempotency_key),
            tenant=job.tenant,
            body_hash=body_hash,
            job_id=job.id,
            created_at=now,
            expires_at=now + IDEMPOTENCY_WINDOW,
        )
        with TransactWrite(connection=self._connection) as tx:
            tx.save(
                record,
                condition=IdempotencyItem.key.does_not_exist() | (IdempotencyItem.expires_at < now),
            )
            tx.save(job_item, condition=ScheduleItem.id.does_not_exist())
            tx.save(execution_item, condition=ExecutionItem.id.does_not_exist())

    def get_idempotency(self, tenant: str, key: str) -> IdempotencyRecord | None:
        try:
            item = IdempotencyItem.get(_idempotency_pk(tenant, key), consistent_read=True)
        except DoesNotExist:
            return None
        return IdempotencyRecord(item.body_hash, item.job_id, item.created_at)

    def get_job(self, job_id: str) -> Job | None:
        try:
            item = ScheduleItem.get(job_id)
        except DoesNotExist:
            return None
        return codec.job_from_item(item) if item.kind == "job" else None

    # -- executions --------------------------------------------------------------------------

    def get_execution(self, execution_id: str, *, consistent: bool = False) -> Execution | None:
        try:
            item = ExecutionItem.get(execution_id, consistent_read=consistent)
        except DoesNotExist:
            return None
        return codec.execution_from_item(item)

    def get_executions(self, ids: Sequence[str]) -> dict[str, Execution]:
        """One BatchGetItem (strongly consistent) for a dispatch batch."""
        found = ExecutionItem.batch_get(list(dict.fromkeys(ids)), consistent_read=True)
        return {item.id: codec.execution_from_item(item) for item in found}

    def list_executions(self, query: ExecutionQuery) -> Page:
        """Newest first (by `scheduled_for`), scoped to the tenant, using the tightest index."""
        range_condition: Condition | None = None
        if query.since and query.until:
            range_condition = ExecutionItem.scheduled_for.between(query.since, query.until)
        elif query.since:
            range_condition = ExecutionItem.scheduled_for >= query.since
        elif query.until:
            range_condition = ExecutionItem.scheduled_for <= query.until

        filters = []
        if query.schedule_id:
            index: Any = ExecutionItem.by_schedule
            hash_key = query.schedule_id
            filters.append(ExecutionItem.tenant == query.tenant)
        elif query.job_id:
            index, hash_key = ExecutionItem.by_job, query.job_id
            filters.append(ExecutionItem.tenant == query.tenant)
        elif query.state:
            index, hash_key = ExecutionItem.by_status, f"{query.tenant}#{query.state.value}"
        else:
            index, hash_key = ExecutionItem.by_tenant, query.tenant
        if query.state and (query.schedule_id or query.job_id):
            filters.append(ExecutionItem.state == query.state.value)
        filter_condition = None
        for condition in filters:
            filter_condition = (
                condition if filter_condition is None else filter_condition & condition
            )

        results = index.query(
            hash_key,
            range_key_condition=range_condition,
            filter_condition=filter_condition,
            scan_index_forward=False,
            limit=query.limit,
            last_evaluated_key=_decode_cursor(query.cursor) if query.cursor else None,
        )
        items = [codec.execution_from_item(item) for item in results]
        next_key = results.last_evaluated_key if len(items) >= query.limit else None
        return Page(items=items, next_cursor=_encode_cursor(next_key))

    def transition(
        self,
        execution: Execution,
        *,
        expect_state: ExecutionState,
        expect_token: int,
        sweep_at: datetime | None,
        expires_at: datetime | None = None,
    ) -> bool:
        """Write the execution's new state if nobody moved it since we read it.

        The condition on state and fencing token is what rejects a zombie attempt's late result.
        """
        item = codec.execution_to_item(execution)
        if sweep_at is not None:
            item.sweep_shard = shard_of(execution.id, self._settings.shards)
            item.sweep_at = sweep_at
        item.expires_at = expires_at
        condition = (ExecutionItem.state == expect_state.value) & (
            ExecutionItem.fencing_token == expect_token
        )
        if expect_state is ExecutionState.RUNNING and execution.state is not ExecutionState.RUNNING:
            # Leaving `running` gives the tenant's concurrency slot back, in the same write.
            try:
                with TransactWrite(connection=self._connection) as tx:
                    tx.save(item, condition=condition)
                    tx.update(TenantItem(id=execution.tenant), actions=[TenantItem.running.add(-1)])
            except TransactWriteError as error:
                if self.first_condition_failed(error):
                    return False
                raise
            return True
        try:
            item.save(condition=condition)
        except PutError as error:
            if error.cause_response_code == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def claim(
        self,
        running: Execution,
        *,
        expect_state: ExecutionState,
        expect_token: int,
        max_concurrency: int,
    ) -> ClaimResult:
        """Start an attempt and take one of the tenant's concurrency slots, or neither."""
        item = codec.execution_to_item(running)
        item.sweep_shard = shard_of(running.id, self._settings.shards)
        item.sweep_at = running.lease_expires_at
        try:
            with TransactWrite(connection=self._connection) as tx:
                tx.save(
                    item,
                    condition=(ExecutionItem.state == expect_state.value)
                    & (ExecutionItem.fencing_token == expect_token),
                )
                tx.update(
                    TenantItem(id=running.tenant),
                    actions=[TenantItem.running.add(1)],
                    condition=TenantItem.running.does_not_exist()
                    | (TenantItem.running < max_concurrency),
                )
        except TransactWriteError as error:
            if self.first_condition_failed(error):
                return ClaimResult.LOST
            reasons = error.cancellation_reasons or []
            if len(reasons) > 1 and reasons[1] is not None:
                return ClaimResult.NO_SLOT
            raise
        return ClaimResult.CLAIMED

    def extend_lease(
        self,
        execution_id: str,
        *,
        fencing_token: int,
        lease_expires_at: datetime,
        task_token: str | None = None,
    ) -> LeaseExtension | None:
        """Move a running attempt's worker lease (and its sweep time with it) if the attempt
        still holds the execution's fencing token; with `task_token`, also keep its long job's
        Step Functions task token. None when the attempt was fenced out or has ended."""
        actions: list[Any] = [
            ExecutionItem.lease_expires_at.set(lease_expires_at),
            ExecutionItem.sweep_shard.set(shard_of(execution_id, self._settings.shards)),
            ExecutionItem.sweep_at.set(lease_expires_at),
        ]
        if task_token is not None:
            actions.append(ExecutionItem.task_token.set(task_token))
        item = ExecutionItem(id=execution_id)
        try:
            item.update(
                actions=actions,
                condition=(ExecutionItem.state == ExecutionState.RUNNING.value)
                & (ExecutionItem.fencing_token == fencing_token),
            )
        except UpdateError as error:
            if error.cause_response_code == "ConditionalCheckFailedException":
                return None
            raise
        return LeaseExtension(lease_expires_at, item.task_token)

    def task_token_of(self, execution_id: str) -> str | None:
        """The Step Functions task token of a long job's running attempt, if it has one."""
        try:
            item = ExecutionItem.get(
                execution_id, consistent_read=True, attributes_to_get=["task_token"]
            )
        except DoesNotExist:
            return None
        return item.task_token

    def _with_sweep(self, item: ExecutionItem) -> ExecutionItem:
        """A new execution is looked at again if its message (or its tick) never comes."""
        item.sweep_shard = shard_of(item.id, self._settings.shards)
        item.sweep_at = item.due_at + timedelta(seconds=self._settings.delivery_grace_s)
        return item

    def sweep_candidates(self, shard: int, now: datetime, limit: int) -> list[Execution]:
        results = ExecutionItem.sweep.query(shard, ExecutionItem.sweep_at <= now, limit=limit)
        return [codec.execution_from_item(item) for item in results]

    # -- shard leases ------------------------------------------------------------------------

    def acquire_lease(self, name: str, owner: str, now: datetime, duration_s: int) -> Lease | None:
        """Take the lease if it is free or expired (epoch + 1), or extend our own."""
        expires = now + timedelta(seconds=duration_s)
        try:
            current = LeaseItem.get(name, consistent_read=True)
        except DoesNotExist:
            item = LeaseItem(name=name, epoch=1, owner=owner, expires_at=expires)
            try:
                item.save(condition=LeaseItem.name.does_not_exist())
            except PutError:
                return None
            return Lease(name, owner, 1, expires)
        if current.owner != owner and current.expires_at > now:
            return None
        epoch = int(current.epoch) + (0 if current.owner == owner else 1)
        took_over = current.owner not in ("", owner)
        try:
            current.update(
                actions=[
                    LeaseItem.epoch.set(epoch),
                    LeaseItem.owner.set(owner),
                    LeaseItem.expires_at.set(expires),
                ],
                condition=(LeaseItem.epoch == current.epoch) & (LeaseItem.owner == current.owner),
            )
        except UpdateError:
            return None
        return Lease(name, owner, epoch, expires, took_over)

    def release_lease(self, lease: Lease, now: datetime) -> None:
        # Already taken over means there is nothing of ours to release.
        with contextlib.suppress(UpdateError):
            LeaseItem(name=lease.name).update(
                actions=[LeaseItem.expires_at.set(now), LeaseItem.owner.set("")],
                condition=(LeaseItem.epoch == lease.epoch) & (LeaseItem.owner == lease.owner),
            )

    def _lease_check(self, tx: TransactWrite, lease: Lease) -> None:
        tx.condition_check(
            LeaseItem,
            lease.name,
            condition=(LeaseItem.epoch == lease.epoch) & (LeaseItem.owner == lease.owner),
        )

    # -- tick --------------------------------------------------------------------------------

    def due_items(self, shard: int, until: datetime, limit: int) -> list[DueItem]:
        results = ScheduleItem.due.query(shard, ScheduleItem.next_run_at <= until, limit=limit)
        return [
            DueItem(
                item.id,
                item.kind,
                item.tenant,
                item.next_run_at,
                item.execution_id,
                codec.schedule_from_item(item) if item.kind == "schedule" else None,
            )
            for item in results
        ]

    def queue_due_jobs(
        self, lease: Lease, items: Sequence[DueItem], now: datetime
    ) -> list[DueItem]:
        """Move due jobs out of the due index and their executions to `queued`, fenced by the
        lease epoch. Returns the items whose execution is now queued (to be enqueued by the
        caller). Raises LeaseLost when the lease was taken over: nothing was written."""
        queued: list[DueItem] = []
        for start in range(0, len(items), _PAIRS_PER_TRANSACTION):
            chunk = items[start : start + _PAIRS_PER_TRANSACTION]
            try:
                self._queue_jobs_tx(lease, chunk, now)
                queued.extend(chunk)
            except TransactWriteError as error:
                if self.first_condition_failed(error):
                    raise LeaseLost(lease.name) from error
                logger.warning(
                    "due jobs transaction cancelled; retrying one by one",
                    extra={"jobs": len(chunk), "reasons": _reason_codes(error)},
                )
                for item in chunk:  # one bad apple: retry the chunk one by one
                    if self._queue_one_job(lease, item, now):
                        queued.append(item)
        return queued

    def _queue_jobs_tx(self, lease: Lease, items: Iterable[DueItem], now: datetime) -> None:
        with TransactWrite(connection=self._connection) as tx:
            self._lease_check(tx, lease)
            for item in items:
                self._clear_due(tx, item)
                self._mark_queued(tx, item, now)

    def _queue_one_job(self, lease: Lease, item: DueItem, now: datetime) -> bool:
        try:
            self._queue_jobs_tx(lease, [item], now)
            return True
        except TransactWriteError as error:
            if self.first_condition_failed(error):
                raise LeaseLost(lease.name) from error
        # The execution left `scheduled` (e.g. cancelled): just take the job off the due index.
        try:
            with TransactWrite(connection=self._connection) as tx:
                self._lease_check(tx, lease)
                self._clear_due(tx, item)
        except TransactWriteError as error:
            if self.first_condition_failed(error):
                raise LeaseLost(lease.name) from error
        return False

    @staticmethod
    def _clear_due(tx: TransactWrite, item: DueItem) -> None:
        tx.update(
            ScheduleItem(id=item.id),
            actions=[ScheduleItem.due_shard.remove(), ScheduleItem.next_run_at.remove()],
            condition=ScheduleItem.next_run_at == item.next_run_at,
        )

    def _mark_queued(self, tx: TransactWrite, item: DueItem, now: datetime) -> None:
        assert item.execution_id is not None
        grace = timedelta(seconds=self._settings.delivery_grace_s)
        tx.update(
            ExecutionItem(id=item.execution_id),
            actions=[
                ExecutionItem.state.set(ExecutionState.QUEUED.value),
                ExecutionItem.tenant_state.set(f"{item.tenant}#{ExecutionState.QUEUED.value}"),
                ExecutionItem.sweep_shard.set(shard_of(item.execution_id, self._settings.shards)),
                ExecutionItem.sweep_at.set(max(item.next_run_at, now) + grace),
            ],
            condition=ExecutionItem.state == ExecutionState.SCHEDULED.value,
        )

    @staticmethod
    def first_condition_failed(error: TransactWriteError) -> bool:
        """Whether the transaction's first action failed its condition. Every transaction here
        puts its guard first: the lease check, the idempotency record or the name lock."""
        reasons = error.cancellation_reasons
        return (
            bool(reasons)
            and reasons[0] is not None
            and (reasons[0].code == "ConditionalCheckFailed")
        )

    # -- schedules ---------------------------------------------------------------------------

    def _schedule_item(self, schedule: Schedule) -> ScheduleItem:
        item = codec.schedule_to_item(schedule)
        if schedule.next_run_at is not None:
            item.due_shard = shard_of(schedule.id, self._settings.shards)
            item.next_run_at = schedule.next_run_at
        return item

    @staticmethod
    def _name_lock(tenant: str, name: str) -> ScheduleItem:
        # Names are unique per tenant: a lock item per name, written in the same transaction.
        return ScheduleItem(
            id=f"name#{tenant}#{name}",
            kind="name",
            tenant=tenant,
            target={},
            payload={},
            retry={},
            priority="normal",
            created_at=datetime.fromtimestamp(0, UTC),
        )

    def create_schedule(self, schedule: Schedule) -> None:
        try:
            with TransactWrite(connection=self._connection) as tx:
                tx.save(
                    self._name_lock(schedule.tenant, schedule.name),
                    condition=ScheduleItem.id.does_not_exist(),
                )
                tx.save(self._schedule_item(schedule), condition=ScheduleItem.id.does_not_exist())
        except TransactWriteError as error:
            if self.first_condition_failed(error):
                raise AlreadyExists(
                    f"a schedule named {schedule.name!r} already exists", field="name"
                ) from None
            raise

    def get_schedule(self, schedule_id: str) -> Schedule | None:
        try:
            item = ScheduleItem.get(schedule_id, consistent_read=True)
        except DoesNotExist:
            return None
        return codec.schedule_from_item(item) if item.kind == "schedule" else None

    def save_schedule(self, schedule: Schedule, *, expect_version: int, old_name: str) -> bool:
        """Replace a schedule if its version is still `expect_version` (renames move the lock)."""
        condition = ScheduleItem.version == expect_version
        try:
            with TransactWrite(connection=self._connection) as tx:
                if old_name != schedule.name:
                    tx.save(
                        self._name_lock(schedule.tenant, schedule.name),
                        condition=ScheduleItem.id.does_not_exist(),
                    )
                    tx.delete(self._name_lock(schedule.tenant, old_name))
                tx.save(self._schedule_item(schedule), condition=condition)
        except TransactWriteError as error:
            if old_name != schedule.name and self.first_condition_failed(error):
                raise AlreadyExists(
                    f"a schedule named {schedule.name!r} already exists", field="name"
                ) from None
            return False
        return True

    def delete_schedule(self, schedule: Schedule) -> None:
        with TransactWrite(connection=self._connection) as tx:
            tx.delete(self._name_lock(schedule.tenant, schedule.name))
            tx.delete(ScheduleItem(id=schedule.id))

    def list_schedules(
        self,
        tenant: str,
        *,
        name_prefix: str | None,
        paused: bool | None,
        limit: int,
        cursor: str | None,
    ) -> tuple[list[Schedule], str | None]:
        results = ScheduleItem.by_tenant_name.query(
            tenant,
            range_key_condition=ScheduleItem.name.startswith(name_prefix) if name_prefix else None,
            filter_condition=(
                (ScheduleItem.kind == "schedule")
                & (
                    ScheduleItem.paused == paused
                    if paused is not None
                    else ScheduleItem.kind.exists()
                )
            ),
            limit=limit,
            last_evaluated_key=_decode_cursor(cursor) if cursor else None,
        )
        items = [codec.schedule_from_item(item) for item in results]
        next_key = results.last_evaluated_key if len(items) >= limit else None
        return items, _encode_cursor(next_key)

    def schedules_after(self, upstream_id: str) -> list[Schedule]:
        return [codec.schedule_from_item(i) for i in ScheduleItem.by_after.query(upstream_id)]

    def executions_of(
        self, schedule_id: str, states: set[ExecutionState], limit: int = 100
    ) -> list[Execution]:
        """Newest first; the index is eventually consistent, so re-read before acting."""
        results = ExecutionItem.by_schedule.query(
            schedule_id,
            filter_condition=ExecutionItem.state.is_in(*[s.value for s in states]),
            scan_index_forward=False,
            limit=limit,
        )
        return [codec.execution_from_item(item) for item in results]

    def latest_execution_of(self, schedule_id: str) -> Execution | None:
        for item in ExecutionItem.by_schedule.query(schedule_id, scan_index_forward=False, limit=1):
            return codec.execution_from_item(item)
        return None

    def put_new_execution(self, execution: Execution) -> bool:
        """Create an execution unless one with its id exists (ids derive from the occurrence)."""
        try:
            self._with_sweep(codec.execution_to_item(execution)).save(
                condition=ExecutionItem.id.does_not_exist()
            )
        except PutError as error:
            if error.cause_response_code == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def fire_schedules(
        self, lease: Lease | None, plans: Sequence[tuple[DueItem, FiringPlan]], now: datetime
    ) -> list[tuple[DueItem, FiringPlan]]:
        """Write each plan's executions and advance its schedule, fenced by the lease epoch and
        conditional on the schedule not having moved since it was read. Plans are packed into
        transactions of up to 100 actions; a transaction that fails for one plan is retried
        plan by plan. Returns the plans that were written. Raises LeaseLost. Without a lease
        (the API firing a schedule due right away) the schedule's own condition still makes
        the write happen once."""
        written: list[tuple[DueItem, FiringPlan]] = []
        batch: list[tuple[DueItem, FiringPlan]] = []
        budget = 99

        def flush() -> None:
            if not batch:
                return
            try:
                self._fire_tx(lease, batch, now)
                written.extend(batch)
            except TransactWriteError as error:
                if lease is not None and self.first_condition_failed(error):
                    raise LeaseLost(lease.name) from error
                for one in batch:
                    try:
                        self._fire_tx(lease, [one], now)
                        written.append(one)
                    except TransactWriteError as single_error:
                        if lease is not None and self.first_condition_failed(single_error):
                            raise LeaseLost(lease.name) from single_error
            batch.clear()

        for entry in plans:
            actions = 1 + len(entry[1].executions)
            if actions > budget - sum(1 + len(p.executions) for _, p in batch):
                flush()
            batch.append(entry)
        flush()
        return written

    def _fire_tx(
        self, lease: Lease | None, plans: Sequence[tuple[DueItem, FiringPlan]], now: datetime
    ) -> None:
        retention = now + self._settings.history_retention
        with TransactWrite(connection=self._connection) as tx:
            if lease is not None:
                self._lease_check(tx, lease)
            for item, plan in plans:
                assert item.schedule is not None
                schedule = item.schedule
                schedule.next_occurrence = plan.next_occurrence
                due = schedule.next_run_at
                actions: list[Any]
                if plan.next_occurrence is None or due is None:
                    actions = [
                        ScheduleItem.next_occurrence.remove(),
                        ScheduleItem.due_shard.remove(),
                        ScheduleItem.next_run_at.remove(),
                    ]
                else:
                    actions = [
                        ScheduleItem.next_occurrence.set(plan.next_occurrence),
                        ScheduleItem.next_run_at.set(due),
                    ]
                tx.update(
                    ScheduleItem(id=item.id),
                    actions=actions,
                    condition=(ScheduleItem.next_run_at == item.next_run_at)
                    & (ScheduleItem.timing_version == schedule.timing_version),
                )
                for execution in plan.executions:
                    execution_item = codec.execution_to_item(execution)
                    if execution.state is ExecutionState.QUEUED:
                        execution_item = self._with_sweep(execution_item)
                    else:
                        execution_item.expires_at = retention
                    tx.save(execution_item, condition=ExecutionItem.id.does_not_exist())

    # -- audit -------------------------------------------------------------------------------

    def audit(
        self,
        principal: Principal,
        action: str,
        target_id: str,
        at: datetime,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Record a manual action by the caller's key, in the caller's tenant."""
        AuditItem(
            tenant=principal.tenant,
            sk=f"{at.isoformat()}#{uuid.uuid4().hex[:8]}",
            action=action,
            actor_key_id=principal.key_id,
            target_id=target_id,
            at=at,
            details=details or {},
        ).save()

    def list_audit(self, tenant: str, limit: int) -> list[dict[str, Any]]:
        return [
            {
                "action": item.action,
                "actor_key_id": item.actor_key_id,
                "target_id": item.target_id,
                "at": item.at,
                "details": item.details,
            }
            for item in AuditItem.query(tenant, scan_index_forward=False, limit=limit)
        ]
