"""What a target receives for one attempt, exactly as API.md specifies."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cronwheel.domain.instants import format_instant
from cronwheel.domain.model import Execution
from cronwheel.domain.signing import signature


@dataclass(frozen=True)
class Delivery:
    body: bytes
    headers: dict[str, str]


def delivery_document(execution: Execution) -> dict[str, Any]:
    document: dict[str, Any] = {"execution_id": execution.id, "tenant": execution.tenant}
    if execution.schedule_id:
        document["schedule_id"] = execution.schedule_id
    else:
        document["job_id"] = execution.job_id
    document.update(
        {
            "scheduled_for": format_instant(execution.scheduled_for),
            "attempt": execution.attempt,
            "fencing_token": execution.fencing_token,
            "payload": execution.payload,
        }
    )
    return document


def build_delivery(
    execution: Execution, signing_secret: str, now: datetime, extra_headers: dict[str, str]
) -> Delivery:
    """Body and headers for the current attempt (call after the claim set attempt and token)."""
    body = json.dumps(delivery_document(execution), separators=(",", ":")).encode()
    timestamp = str(int(now.timestamp()))
    headers = dict(extra_headers)
    headers.update(
        {
            "Content-Type": "application/json",
            "Idempotency-Key": execution.id,
            "X-Cronwheel-Execution-Id": execution.id,
            "X-Cronwheel-Attempt": str(execution.attempt),
            "X-Cronwheel-Fencing-Token": str(execution.fencing_token),
            "X-Cronwheel-Scheduled-For": format_instant(execution.scheduled_for),
            "X-Cronwheel-Timestamp": timestamp,
            "X-Cronwheel-Signature": signature(signing_secret, timestamp, body),
        }
    )
    return Delivery(body=body, headers=headers)
