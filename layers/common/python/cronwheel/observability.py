"""Metrics with a tenant dimension, as CloudWatch embedded metric format (EMF) log lines.

A handler collects counts for the whole invocation and flushes one EMF document per tenant, so a
batch of 10 executions of 2 tenants writes 2 lines, not 10. Powertools adds `service`.
"""

from __future__ import annotations

from collections import defaultdict

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from cronwheel import metric_names as names
from cronwheel.domain.model import ExecutionState


class TenantMetrics:
    def __init__(self) -> None:
        self._counts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._lags: dict[str, list[float]] = defaultdict(list)
        self._stage_counts: dict[str, float] = defaultdict(float)

    def count(self, tenant: str, metric: str, value: float = 1) -> None:
        self._counts[tenant][metric] += value

    def lag(self, tenant: str, lag_ms: float) -> None:
        self._lags[tenant].append(lag_ms)

    def count_stage(self, metric: str, value: float = 1) -> None:
        self._stage_counts[metric] += value

    def attempt_ended(
        self, tenant: str, state: ExecutionState, attempt: int, lag_ms: int | None
    ) -> None:
        """Count one finished attempt: the first one is the fire, and carries the fire lag."""
        if attempt == 1:
            self.count(tenant, names.FIRED)
            if lag_ms is not None:
                self.lag(tenant, lag_ms)
        if state is ExecutionState.SUCCEEDED:
            self.count(tenant, names.SUCCEEDED)
            return
        self.count(tenant, names.FAILED)
        if state is ExecutionState.RETRY_SCHEDULED:
            self.count(tenant, names.RETRIED)
        elif state is ExecutionState.DEAD:
            self.count(tenant, names.DEAD)

    def flush(self) -> None:
        for tenant in sorted(set(self._counts) | set(self._lags)):
            metrics = EphemeralMetrics(namespace=names.NAMESPACE)
            metrics.add_dimension(names.TENANT_DIMENSION, tenant)
            for metric, value in self._counts[tenant].items():
                metrics.add_metric(name=metric, unit=MetricUnit.Count, value=value)
            for lag_ms in self._lags[tenant]:
                metrics.add_metric(
                    name=names.FIRE_LAG_MS, unit=MetricUnit.Milliseconds, value=lag_ms
                )
            metrics.flush_metrics()
        if self._stage_counts:
            stage = EphemeralMetrics(namespace=names.NAMESPACE)
            for metric, value in self._stage_counts.items():
                stage.add_metric(name=metric, unit=MetricUnit.Count, value=value)
            stage.flush_metrics()
        self._counts.clear()
        self._lags.clear()
        self._stage_counts.clear()
