"""The per-shard tick: find due work, fire it under the shard lease, enqueue it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from aws_lambda_powertools import Logger

from cronwheel.dispatch_queue import DispatchMessage, DispatchQueue
from cronwheel.domain.model import ExecutionState
from cronwheel.domain.schedule import plan_firing
from cronwheel.services.quotas import apply_daily_quotas, count_daily_usage
from cronwheel.settings import Settings
from cronwheel.store.store import DueItem, Lease, LeaseLost, Store

logger = Logger(child=True)

PAGE = 500
MAX_PAGES = 40


@dataclass
class TickReport:
    shard: int
    epoch: int | None = None
    fired: list[DueItem] = field(default_factory=list)
    lease_lost: bool = False
    lease_busy: bool = False
    took_over: bool = False
    skipped_by_tenant: dict[str, int] = field(default_factory=dict)


def lease_name(shard: int) -> str:
    return f"tick#{shard}"


class Tick:
    """One tick of one shard, in steps a test can interleave: acquire, collect, fire, release."""

    def __init__(
        self, store: Store, queue: DispatchQueue, settings: Settings, shard: int, owner: str
    ) -> None:
        self._store = store
        self._queue = queue
        self._settings = settings
        self.shard = shard
        self.owner = owner
        self.lease: Lease | None = None
        self.skipped: dict[str, int] = {}  # misfire records written, by tenant

    def acquire(self, now: datetime) -> Lease | None:
        self.lease = self._store.acquire_lease(
            lease_name(self.shard), self.owner, now, self._settings.shard_lease_s
        )
        return self.lease

    def collect(self, now: datetime) -> list[DueItem]:
        until = now + timedelta(seconds=self._settings.lookahead_s)
        return self._store.due_items(self.shard, until, PAGE)

    def fire(self, items: list[DueItem], now: datetime) -> list[DueItem]:
        """Write the due executions (fenced by the lease epoch), then send their messages.

        Jobs move their `scheduled` execution to `queued`; schedules create the executions of
        their due occurrences (or `skipped` records, per misfire policy) and advance, in the same
        transaction. A message not sent here is re-sent by the sweeper after its grace."""
        assert self.lease is not None, "acquire the lease first"
        jobs = [item for item in items if item.kind == "job"]
        queued = self._store.queue_due_jobs(self.lease, jobs, now)
        messages = [DispatchMessage(i.execution_id or "", 0, i.next_run_at) for i in queued]
        lookahead = timedelta(seconds=self._settings.lookahead_s)
        plans = [
            (item, plan_firing(item.schedule, now, lookahead))
            for item in items
            if item.kind == "schedule" and item.schedule is not None
        ]
        apply_daily_quotas(self._store, plans, now)
        fired = self._store.fire_schedules(self.lease, plans, now)
        count_daily_usage(self._store, fired, now)
        for _, plan in fired:
            messages += [DispatchMessage(e.id, 0, e.due_at) for e in plan.to_enqueue]
            for execution in plan.executions:
                if execution.state is ExecutionState.SKIPPED:
                    self.skipped[execution.tenant] = self.skipped.get(execution.tenant, 0) + 1
        self._queue.send(messages, now)
        return queued + [item for item, _ in fired]

    def release(self, now: datetime) -> None:
        if self.lease is not None:
            self._store.release_lease(self.lease, now)

    def run(self, now: datetime) -> TickReport:
        report = TickReport(shard=self.shard)
        lease = self.acquire(now)
        if lease is None:
            report.lease_busy = True
            return report
        report.epoch = lease.epoch
        report.took_over = lease.took_over
        try:
            for _ in range(MAX_PAGES):
                items = self.collect(now)
                report.fired.extend(self.fire(items, now))
                if len(items) < PAGE:
                    break
        except LeaseLost:
            logger.warning("shard lease taken over; stopping", extra={"shard": self.shard})
            report.lease_lost = True
            return report
        self.release(now)
        report.skipped_by_tenant = dict(self.skipped)
        return report
