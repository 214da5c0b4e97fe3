"""The dispatch queue: near-term work rides SQS `DelaySeconds` (at most 900 s)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cronwheel import aws_clients
from cronwheel.domain.instants import format_instant
from cronwheel.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

MAX_DELAY_S = 900
_BATCH = 10


@dataclass(frozen=True)
class DispatchMessage:
    """Run attempt `token + 1` of an execution, not before `due_at`.

    With a `task_token` it is the long-job state machine's hand-over instead: deliver the
    running attempt `token` of a long job to its target (see `long_job_machine`)."""

    execution_id: str
    token: int
    due_at: datetime
    task_token: str | None = None
    # Already admitted by fair pacing (or a limit): not paced again when it comes back.
    paced: bool = False

    def to_json(self) -> str:
        doc: dict[str, Any] = {
            "execution_id": self.execution_id,
            "token": self.token,
            "due_at": format_instant(self.due_at),
        }
        if self.task_token is not None:
            doc["task_token"] = self.task_token
        if self.paced:
            doc["paced"] = True
        return json.dumps(doc)

    @classmethod
    def from_json(cls, body: str) -> DispatchMessage:
        doc: dict[str, Any] = json.loads(body)
        return cls(
            execution_id=str(doc["execution_id"]),
            token=int(doc["token"]),
            due_at=datetime.fromisoformat(str(doc["due_at"])),
            task_token=str(doc["task_token"]) if doc.get("task_token") else None,
            paced=bool(doc.get("paced", False)),
        )


def delay_for(due_at: datetime, now: datetime) -> int:
    """Whole seconds SQS may hold the message. Rounded down: the dispatcher waits out the rest,
    so a message is never later than needed and never runs early."""
    return max(0, min(MAX_DELAY_S, math.floor((due_at - now).total_seconds())))


class DispatchQueue:
    def __init__(self, settings: Settings, client: SQSClient | None = None) -> None:
        self._url = settings.dispatch_queue_url
        self._client: SQSClient = client or aws_clients.client(
            "sqs", settings.region, settings.endpoint_url
        )

    def send(self, messages: Sequence[DispatchMessage], now: datetime) -> list[DispatchMessage]:
        """Send in batches of 10; returns the messages SQS did not take (after one retry).

        Anything not sent is found again by the sweeper, so a failure here loses nothing."""
        unsent: list[DispatchMessage] = []
        for start in range(0, len(messages), _BATCH):
            batch = list(messages[start : start + _BATCH])
            for _ in range(2):
                batch = self._send_batch(batch, now)
                if not batch:
                    break
            unsent.extend(batch)
        return unsent

    def _send_batch(self, batch: list[DispatchMessage], now: datetime) -> list[DispatchMessage]:
        entries = [
            {
                "Id": str(index),
                "MessageBody": message.to_json(),
                "DelaySeconds": delay_for(message.due_at, now),
            }
            for index, message in enumerate(batch)
        ]
        response = self._client.send_message_batch(QueueUrl=self._url, Entries=entries)  # type: ignore[arg-type]
        return [batch[int(failed["Id"])] for failed in response.get("Failed", [])]
