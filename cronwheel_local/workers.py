"""The event sources, emulated: timers for tick and sweeper, an SQS poller for dispatch."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from .lambda_context import LocalContext

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
log = logging.getLogger("cronwheel.local")

# Lambda returns a failed record to the queue after the visibility timeout; locally we shorten
# that so a failed batch item is retried within seconds.
LOCAL_RETRY_VISIBILITY_S = 5
# After an empty receive the poller waits, doubling up to the maximum while the queue stays
# empty: moto looks at every message (delayed ones too) on each receive, so polling an idle
# queue fast takes the emulator from real work. Lambda's event source long-polls instead.
IDLE_POLL_S = 0.05
MAX_IDLE_POLL_S = 0.25


class Timer(threading.Thread):
    """Invokes a handler every `interval_s` with each of `events` (one per shard for the tick)."""

    def __init__(
        self,
        name: str,
        interval_s: float,
        handler: Handler,
        events: list[dict[str, Any]],
        stop: threading.Event,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._interval_s = interval_s
        self._handler = handler
        self._events = events
        self._stopping = stop

    def run(self) -> None:
        while not self._stopping.wait(self._interval_s):
            for event in self._events:
                try:
                    self._handler(event, LocalContext(self.name))
                except Exception:
                    log.exception("%s invocation failed", self.name)


class SqsEventSource:
    """Lambda's SQS event source, emulated: one poller receives batches of up to 10 and hands
    them to `concurrency` workers, each invoking the dispatch handler; successes are deleted,
    reported failures become visible again after a short while."""

    def __init__(
        self, sqs: Any, queue_url: str, handler: Handler, concurrency: int, stop: threading.Event
    ) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._handler = handler
        self._stopping = stop
        self._batches: queue.Queue[list[dict[str, Any]]] = queue.Queue(maxsize=concurrency)
        self._arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.threads = [
            threading.Thread(target=self._poll, name="cronwheel-sqs-poller", daemon=True)
        ]
        self.threads += [
            threading.Thread(target=self._work, name=f"cronwheel-dispatch-{n}", daemon=True)
            for n in range(concurrency)
        ]

    def _poll(self) -> None:
        idle_s = IDLE_POLL_S
        while not self._stopping.is_set():
            try:
                messages = self._sqs.receive_message(
                    QueueUrl=self._queue_url,
                    MaxNumberOfMessages=10,
                    # No long poll: the emulator serves one request at a time.
                    WaitTimeSeconds=0,
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                ).get("Messages", [])
            except Exception:
                log.exception("dispatch poll failed")
                self._stopping.wait(1)
                continue
            if not messages:
                self._stopping.wait(idle_s)
                idle_s = min(idle_s * 2, MAX_IDLE_POLL_S)
                continue
            idle_s = IDLE_POLL_S
            while not self._stopping.is_set():
                try:
                    self._batches.put(messages, timeout=0.5)
                    break
                except queue.Full:
                    continue

    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                messages = self._batches.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                self._deliver(messages)
            except Exception:
                log.exception("dispatch delivery failed")

    def _deliver(self, messages: list[dict[str, Any]]) -> None:
        event = {"Records": [self._record(m) for m in messages]}
        try:
            result = self._handler(event, LocalContext("cronwheel-dispatch"))
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        except Exception:
            log.exception("dispatch handler failed")
            failed = {m["MessageId"] for m in messages}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=self._queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        retry = [m for m in messages if m["MessageId"] in failed]
        if retry:
            self._sqs.change_message_visibility_batch(
                QueueUrl=self._queue_url,
                Entries=[
                    {
                        "Id": str(i),
                        "ReceiptHandle": m["ReceiptHandle"],
                        "VisibilityTimeout": LOCAL_RETRY_VISIBILITY_S,
                    }
                    for i, m in enumerate(retry)
                ],
            )

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self._arn,
            "awsRegion": "us-east-1",
        }
