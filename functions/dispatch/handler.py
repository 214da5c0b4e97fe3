"""Dispatch: an SQS batch of execution messages, with partial batch failures reported."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from cronwheel import metric_names
from cronwheel.dispatch_queue import DispatchMessage
from cronwheel.domain.model import ExecutionState
from cronwheel.observability import TenantMetrics
from cronwheel.runtime import runtime
from cronwheel.services.dispatch import Dispatcher

logger = Logger(service="cronwheel-dispatch")
_dispatchers: dict[int, Dispatcher] = {}


def _dispatcher() -> Dispatcher:
    """One per runtime, so its signing-secret cache outlives a batch (a warm Lambda reuses it)."""
    rt = runtime()
    key = id(rt)
    if key not in _dispatchers:
        _dispatchers.clear()
        _dispatchers[key] = Dispatcher(
            rt.store, rt.queue, rt.http, rt.sqs, rt.settings, rt.clock, rt.secrets
        )
    return _dispatchers[key]


def _parse(body: str) -> DispatchMessage | None:
    try:
        return DispatchMessage.from_json(body)
    except (ValueError, KeyError, TypeError):
        return None  # reported as this record's failure below; it ends in the DLQ


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    dispatcher = _dispatcher()
    prefetched = dispatcher.prefetch(
        [m for m in (_parse(r["body"]) for r in event.get("Records", [])) if m is not None]
    )

    metrics = TenantMetrics()
    later: list[DispatchMessage] = []  # sent again (waiting for their turn): one batch at the end

    def handle(record: SQSRecord) -> None:
        outcome = dispatcher.handle(DispatchMessage.from_json(record.body), prefetched, later)
        if outcome.attempt_ended:
            assert outcome.tenant is not None and outcome.state is not None
            metrics.attempt_ended(outcome.tenant, outcome.state, outcome.attempt, outcome.lag_ms)
        elif outcome.tenant is not None and outcome.state is ExecutionState.SKIPPED:
            metrics.count(outcome.tenant, metric_names.SKIPPED)
        elif outcome.tenant is not None and outcome.note == "throttled":
            metrics.count(outcome.tenant, metric_names.THROTTLED)
        logger.info(
            "dispatched",
            extra={
                "execution_id": outcome.execution_id,
                "tenant": outcome.tenant,
                "state": outcome.state,
                "lag_ms": outcome.lag_ms,
                "note": outcome.note,
            },
        )

    try:
        # A processor per invocation: it holds the batch's records, and the local stack runs
        # several invocations of this handler at once in one process.
        processor = BatchProcessor(event_type=EventType.SQS)
        response = process_partial_response(event, handle, processor, context)
        dispatcher.send_later(later)
        return response
    finally:
        metrics.flush()
