"""Admission against the tenant's quotas: 429 `resource_exhausted` saying which and when."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from cronwheel.domain.quota import (
    daily_quota_message,
    quota_skip_reason,
    schedules_quota_message,
    within_daily_quota,
)
from cronwheel.domain.schedule import FiringPlan
from cronwheel.errors import ResourceExhausted
from cronwheel.store.store import DueItem, Store


def admit_execution(store: Store, tenant_id: str, now: datetime) -> None:
    """Count one API-created execution (a job, a manual trigger) against today's quota."""
    if store.take_daily_execution(tenant_id, now):
        return
    tenant = store.get_tenant(tenant_id)
    raise ResourceExhausted(
        daily_quota_message(tenant.max_executions_per_day if tenant else 0, now)
    )


def admit_schedule(store: Store, tenant_id: str) -> None:
    """Refuse a new schedule once the tenant has `max_schedules`. Counted, not reserved: two
    creates racing for the last place may both get it (documented in docs/tenancy.md)."""
    tenant = store.get_tenant(tenant_id)
    if tenant is not None and store.count_schedules(tenant_id) >= tenant.max_schedules:
        raise ResourceExhausted(schedules_quota_message(tenant.max_schedules))


def apply_daily_quotas(
    store: Store, plans: Sequence[tuple[DueItem, FiringPlan]], now: datetime
) -> None:
    """A schedule's occurrences over its tenant's `max_executions_per_day` are recorded
    `skipped`, saying which quota and when it resets, instead of run."""
    by_tenant: dict[str, list[FiringPlan]] = defaultdict(list)
    for item, plan in plans:
        if plan.to_enqueue:
            by_tenant[item.tenant].append(plan)
    for tenant_id, tenant_plans in by_tenant.items():
        usage = store.daily_usage(tenant_id, now)
        if usage is None:
            continue
        if usage.room < sum(len(p.to_enqueue) for p in tenant_plans):
            reason = quota_skip_reason(usage.limit, now)
            within_daily_quota(tenant_plans, usage.room, reason, now)


def count_daily_usage(
    store: Store, fired: Sequence[tuple[DueItem, FiringPlan]], now: datetime
) -> None:
    """Count the occurrences that were written to run. Checked, then counted: two shards
    firing the same tenant's schedules at once may run a few over the quota."""
    counts: dict[str, int] = defaultdict(int)
    for item, plan in fired:
        counts[item.tenant] += len(plan.to_enqueue)
    for tenant_id, count in counts.items():
        if count:
            store.add_daily_executions(tenant_id, count, now)
