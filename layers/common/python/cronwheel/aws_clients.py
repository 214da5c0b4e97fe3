"""boto3 clients for the firing path, all with the same retry policy.

Throttling (throughput exceeded, SQS throttling) and transient errors are retried by botocore's
standard mode with jittered exponential backoff. When the budget runs out the call raises; the
work is found again by the next tick, the sweeper, or SQS redelivery, so nothing is lost.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

# Attempts per call, the first included. At a 30% throttling rate a call fails all ten with
# probability 0.3**10 (about 6 in a million). PynamoDB's models use the same figure.
MAX_ATTEMPTS = 10

RETRY_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS})


def client(service: str, region: str, endpoint_url: str | None) -> Any:
    """A client for `service` with the firing path's retry policy."""
    return boto3.client(
        service,  # type: ignore[call-overload]
        region_name=region,
        endpoint_url=endpoint_url,
        config=RETRY_CONFIG,
    )
