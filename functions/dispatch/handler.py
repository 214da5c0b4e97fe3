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

from cronwheel.dispatch_queue import DispatchMessage
from cronwheel.runtime import runtime
from cronwheel.services.dispatch import Dispatcher

logger = Logger(service="cronwheel-dispatch")
processor = BatchProcessor(event_type=EventType.SQS)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    rt = runtime()
    dispatcher = Dispatcher(rt.store, rt.queue, rt.http, rt.sqs, rt.settings, rt.clock)
    dispatcher.prefetch([DispatchMessage.from_json(r["body"]) for r in event.get("Records", [])])

    def handle(record: SQSRecord) -> None:
        outcome = dispatcher.handle(DispatchMessage.from_json(record.body))
        logger.info(
            "dispatched",
            extra={"execution_id": outcome.execution_id, "tenant": outcome.tenant,
                   "state": outcome.state, "lag_ms": outcome.lag_ms, "note": outcome.note},
        )

    return process_partial_response(event, handle, processor, context)
