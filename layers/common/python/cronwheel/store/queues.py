"""The SQS queues, defined once for the CDK and the local stack."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QueueSpec:
    logical_name: str
    visibility_timeout_s: int
    max_receive_count: int
    dlq_retention_s: int = 14 * 24 * 3600

    @property
    def env_var(self) -> str:
        return f"CRONWHEEL_QUEUE_{self.logical_name.upper()}_URL"


# Visibility must outlast the longest inline attempt (840 s) plus the dispatcher's own work.
DISPATCH = QueueSpec("dispatch", visibility_timeout_s=960, max_receive_count=5)

ALL_QUEUES: tuple[QueueSpec, ...] = (DISPATCH,)
