"""Dead-execution events: one SNS message per execution that ends `dead`.

The topic is per stage; each message carries the tenant as a message attribute, so a tenant (or
its on-call tooling) subscribes with a filter policy such as `{"tenant": ["acme"]}`. Delivery is
at least once: an event whose publication failed is published again by the sweeper, so a
subscriber may see one twice and should key on `execution_id`.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from cronwheel import aws_clients
from cronwheel.domain.instants import format_instant
from cronwheel.domain.model import Execution
from cronwheel.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sns.type_defs import MessageAttributeValueTypeDef

logger = Logger(child=True)

EVENT_TYPE = "execution.dead"
_SUBJECT_LIMIT = 100  # SNS refuses longer subjects


def dead_event_document(execution: Execution, stage: str) -> dict[str, Any]:
    """What subscribers receive: enough to find the execution and act without another call."""
    last = execution.attempts[-1] if execution.attempts else None
    document: dict[str, Any] = {
        "type": EVENT_TYPE,
        "stage": stage,
        "tenant": execution.tenant,
        "execution_id": execution.id,
        "schedule_id": execution.schedule_id,
        "job_id": execution.job_id,
        "trigger": execution.trigger.value,
        "scheduled_for": format_instant(execution.scheduled_for),
        "attempts": execution.attempt,
        "reason": execution.reason,
        "last_error": last.error if last else None,
        "last_http_status": last.http_status if last else None,
        "finished_at": format_instant(execution.finished_at) if execution.finished_at else None,
    }
    return document


def _attributes(execution: Execution) -> dict[str, MessageAttributeValueTypeDef]:
    attributes: dict[str, MessageAttributeValueTypeDef] = {
        "tenant": {"DataType": "String", "StringValue": execution.tenant},
        "event": {"DataType": "String", "StringValue": EVENT_TYPE},
    }
    if execution.schedule_id:
        attributes["schedule_id"] = {"DataType": "String", "StringValue": execution.schedule_id}
    if execution.job_id:
        attributes["job_id"] = {"DataType": "String", "StringValue": execution.job_id}
    return attributes


class DeadEventPublisher:
    """Publishes dead events to the stage's topic; without a topic there is nothing to do."""

    def __init__(self, settings: Settings, client: SNSClient | None = None) -> None:
        self._topic_arn = settings.dead_letter_topic_arn
        self._stage = settings.stage
        self._region = settings.region
        self._endpoint_url = settings.endpoint_url
        self._client: SNSClient | None = client

    def _sns(self) -> SNSClient:
        # Built on the first dead execution, not at cold start: most invocations never need it.
        if self._client is None:
            self._client = aws_clients.client("sns", self._region, self._endpoint_url)
        return self._client

    @property
    def enabled(self) -> bool:
        return self._topic_arn is not None

    def publish(self, execution: Execution) -> bool:
        """True once SNS has the event (after the client's own retries); False if it does not,
        in which case the caller keeps the execution's sweep marker so it is tried again."""
        if self._topic_arn is None:
            return True
        subject = f"cronwheel {self._stage}: execution {execution.id} is dead"
        try:
            self._sns().publish(
                TopicArn=self._topic_arn,
                Subject=subject[:_SUBJECT_LIMIT],
                Message=json.dumps(dead_event_document(execution, self._stage)),
                MessageAttributes=_attributes(execution),
            )
        except (BotoCoreError, ClientError) as error:
            logger.warning(
                "dead event not published; the sweeper tries again",
                extra={
                    "execution_id": execution.id,
                    "tenant": execution.tenant,
                    "error": str(error),
                },
            )
            return False
        return True


_lock = threading.Lock()
_publishers: dict[tuple[str | None, str, str | None, str], DeadEventPublisher] = {}


def publisher_for(settings: Settings) -> DeadEventPublisher:
    """The process's publisher for these settings, built on first use (one client per process,
    whichever of dispatcher, sweeper or API ends the execution)."""
    key = (settings.dead_letter_topic_arn, settings.region, settings.endpoint_url, settings.stage)
    with _lock:
        if key not in _publishers:
            _publishers[key] = DeadEventPublisher(settings)
        return _publishers[key]
