"""The dispatch queue's dead-letter queue: what is in it, and sending it back.

SQS moves a dispatch message to the DLQ after `max_receive_count` receives that did not delete
it: the dispatcher failed on it every time (an unreadable body, or an error it raised). Sending
one back is always safe: the dispatcher runs a message only if its execution is still waiting
for exactly that attempt (state and fencing token), and drops a duplicate or stale one.

The DLQ is found from the dispatch queue's redrive policy, so only the dispatch queue's URL is
needed (the `CronwheelStack` output, or what `cronwheel local` prints).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

_BATCH = 10
# Long enough that one listing never sees a message twice; handed back (0) when it is done.
_PEEK_VISIBILITY_S = 30
_MOVE_VISIBILITY_S = 60


class NoDeadLetterQueue(Exception):
    """The queue has no redrive policy, so there is no DLQ to read."""


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    body: str
    receive_count: int
    first_received_at: datetime | None
    execution_id: str | None
    token: int | None

    def as_document(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "execution_id": self.execution_id,
            "token": self.token,
            "first_received_at": _format(self.first_received_at),
            "receive_count": self.receive_count,
            "body": self.body if self.execution_id is None else None,
        }


@dataclass(frozen=True)
class Redrive:
    moved: int
    failed: int


def _format(instant: datetime | None) -> str | None:
    return instant.isoformat().replace("+00:00", "Z") if instant else None


def _dead_letter(message: dict[str, Any]) -> DeadLetter:
    attributes = message.get("Attributes", {})
    first = attributes.get("ApproximateFirstReceiveTimestamp")
    execution_id: str | None = None
    token: int | None = None
    try:
        document = json.loads(message["Body"])
        execution_id = str(document["execution_id"])
        token = int(document["token"])
    except (ValueError, KeyError, TypeError):
        pass  # not a dispatch message: shown with its raw body
    return DeadLetter(
        message_id=message["MessageId"],
        body=message["Body"],
        receive_count=int(attributes.get("ApproximateReceiveCount", 0)),
        first_received_at=datetime.fromtimestamp(int(first) / 1000, UTC) if first else None,
        execution_id=execution_id,
        token=token,
    )


class DeadLetterQueue:
    """The DLQ behind one source queue (`sqs` is a boto3 SQS client)."""

    def __init__(self, sqs: Any, source_url: str, *, wait_s: int = 1) -> None:
        """`wait_s` 1 makes SQS look on all its servers (a short poll samples some); the local
        emulator, which serves one request at a time, is read with 0."""
        self._sqs = sqs
        self._wait_s = wait_s
        self.source_url = source_url
        self.url = self._find_dlq()

    def _find_dlq(self) -> str:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self.source_url, AttributeNames=["RedrivePolicy"]
        ).get("Attributes", {})
        if "RedrivePolicy" not in attributes:
            raise NoDeadLetterQueue(f"{self.source_url} has no redrive policy (no DLQ)")
        dlq_arn = json.loads(attributes["RedrivePolicy"])["deadLetterTargetArn"]
        # arn:aws:sqs:<region>:<account>:<name>
        _, _, _, _, account, name = dlq_arn.split(":", 5)
        url: str = self._sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)[
            "QueueUrl"
        ]
        return url

    def count(self) -> int:
        """Messages in the DLQ, visible or being read (SQS's approximate figures)."""
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self.url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )

    def peek(self, limit: int = 100) -> list[DeadLetter]:
        """Read up to `limit` messages without removing them: each is hidden while the listing
        runs, then made visible again."""
        seen: dict[str, tuple[DeadLetter, str]] = {}
        for message in self._receive(_PEEK_VISIBILITY_S, limit):
            seen.setdefault(message["MessageId"], (_dead_letter(message), message["ReceiptHandle"]))
        handles = [handle for _, handle in seen.values()]
        for start in range(0, len(handles), _BATCH):
            self._sqs.change_message_visibility_batch(
                QueueUrl=self.url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                    for i, handle in enumerate(handles[start : start + _BATCH])
                ],
            )
        return [letter for letter, _ in seen.values()]

    def redrive(self, limit: int | None = None) -> Redrive:
        """Move messages back to the source queue: send each, then delete it from the DLQ.

        A failure between the two leaves a copy in both; the dispatcher drops the duplicate."""
        moved = failed = 0
        while limit is None or moved + failed < limit:
            room = _BATCH if limit is None else min(_BATCH, limit - moved - failed)
            batch = self._receive_batch(_MOVE_VISIBILITY_S, room)
            if not batch:
                break
            sent = self._sqs.send_message_batch(
                QueueUrl=self.source_url,
                Entries=[
                    {"Id": str(i), "MessageBody": message["Body"]}
                    for i, message in enumerate(batch)
                ],
            )
            done = [batch[int(entry["Id"])] for entry in sent.get("Successful", [])]
            failed += len(batch) - len(done)
            if done:
                self._sqs.delete_message_batch(
                    QueueUrl=self.url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": message["ReceiptHandle"]}
                        for i, message in enumerate(done)
                    ],
                )
            moved += len(done)
            if len(done) < len(batch):
                break  # the rest stay in the DLQ and come back after their visibility timeout
        return Redrive(moved=moved, failed=failed)

    def _receive(self, visibility_s: int, limit: int) -> Iterator[dict[str, Any]]:
        received = 0
        while received < limit:
            batch = self._receive_batch(visibility_s, min(_BATCH, limit - received))
            if not batch:
                return
            received += len(batch)
            yield from batch

    def _receive_batch(self, visibility_s: int, count: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self._sqs.receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=count,
            VisibilityTimeout=visibility_s,
            WaitTimeSeconds=self._wait_s,
            MessageSystemAttributeNames=[
                "ApproximateFirstReceiveTimestamp",
                "ApproximateReceiveCount",
            ],
        ).get("Messages", [])
        return messages
