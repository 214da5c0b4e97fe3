"""Sweeper: re-enqueue lost or far-future work and reap expired worker leases."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cronwheel.observability import TenantMetrics
from cronwheel.runtime import runtime
from cronwheel.services.sweeper import Sweeper

logger = Logger(service="cronwheel-sweeper")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    rt = runtime()
    report = Sweeper(rt.store, rt.queue, rt.settings, rt.dead_events).sweep(rt.clock.now())
    metrics = TenantMetrics()
    for tenant, state, attempt in report.ended:
        metrics.attempt_ended(tenant, state, attempt, lag_ms=None)
    metrics.flush()
    logger.info(
        "sweep done",
        extra={"requeued": len(report.requeued), "reaped": len(report.reaped)},
    )
    return {"requeued": len(report.requeued), "reaped": len(report.reaped)}
