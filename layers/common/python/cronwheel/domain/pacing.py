"""Weighted fair pacing of first attempts across tenants.

Each tenant has a cursor: the earliest time its next execution may start. A tenant's share of
the dispatch rate is its `priority_weight` over the weights of the tenants busy right now (those
whose cursor is ahead of now), so a lone tenant gets the whole rate and a quiet tenant arriving
next to a flood starts at once: its cursor is behind now. Work over a tenant's share is not
dropped; it is given a later start (the caller delays its message until then).

`high` priority starts at once but still takes its place in the tenant's share, pushing the
tenant's `normal` and `low` work later. Pure and thread-safe: the caller passes `now`."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from cronwheel.domain.model import Priority


class FairPacer:
    def __init__(self, rate_per_s: float) -> None:
        if rate_per_s <= 0:
            raise ValueError("rate_per_s must be positive")
        self._rate = rate_per_s
        self._cursors: dict[str, datetime] = {}
        self._weights: dict[str, int] = {}
        self._lock = threading.Lock()

    def start_at(self, tenant: str, weight: int, priority: Priority, now: datetime) -> datetime:
        """Reserve the tenant's next start and return it (`now` when within its share)."""
        with self._lock:
            self._forget_idle(now)
            self._weights[tenant] = max(1, weight)
            busy = sum(self._weights[t] for t in self._cursors if t != tenant)
            share = self._rate * self._weights[tenant] / (busy + self._weights[tenant])
            start = max(now, self._cursors.get(tenant, now))
            self._cursors[tenant] = start + timedelta(seconds=1 / share)
            return now if priority is Priority.HIGH else start

    def _forget_idle(self, now: datetime) -> None:
        for tenant in [t for t, cursor in self._cursors.items() if cursor <= now]:
            del self._cursors[tenant]
