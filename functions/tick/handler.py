"""Tick: with a shard, fire that shard's due work; without one, fan out to every shard."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cronwheel import metric_names
from cronwheel.observability import TenantMetrics
from cronwheel.runtime import runtime
from cronwheel.services.tick import Tick

logger = Logger(service="cronwheel-tick")


def _fan_out(shards: int, function_name: str) -> None:
    client = boto3.client("lambda")
    for shard in range(shards):
        client.invoke(
            FunctionName=function_name,
            InvocationType="Event",
            Payload=json.dumps({"shard": shard}).encode(),
        )


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    rt = runtime()
    if "shard" not in event:
        _fan_out(rt.settings.shards, os.environ["AWS_LAMBDA_FUNCTION_NAME"])
        return {"fanned_out": rt.settings.shards}
    shard = int(event["shard"])
    owner = f"{context.aws_request_id}:{uuid.uuid4().hex[:8]}"
    report = Tick(rt.store, rt.queue, rt.settings, shard, owner).run(rt.clock.now())
    metrics = TenantMetrics()
    if report.took_over:
        metrics.count_stage(metric_names.LEASE_TAKEOVERS)
    for tenant, skipped in report.skipped_by_tenant.items():
        metrics.count(tenant, metric_names.SKIPPED, skipped)
    metrics.flush()
    logger.info(
        "tick done",
        extra={
            "shard": shard,
            "epoch": report.epoch,
            "fired": len(report.fired),
            "lease_lost": report.lease_lost,
            "lease_busy": report.lease_busy,
        },
    )
    return {"shard": shard, "fired": len(report.fired), "lease_lost": report.lease_lost}
