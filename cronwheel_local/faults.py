"""Fault injection for the local emulator: AWS answering "slow down" to a share of requests.

Used by tests and benchmarks to prove that the firing path retries throttling at every call
site and loses nothing. Only DynamoDB and SQS requests are throttled (the firing path)."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Iterable
from typing import Any

StartResponse = Callable[..., Any]

# service -> (error __type, content type) as the real services answer a throttled request
_THROTTLED = {
    "DynamoDB": (
        "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "application/x-amz-json-1.0",
    ),
    "AmazonSQS": ("com.amazonaws.sqs#ThrottlingException", "application/x-amz-json-1.0"),
}


class Throttling:
    """Throttle each DynamoDB or SQS request with probability `rate`; counts what it did."""

    def __init__(self, rate: float, seed: int = 7) -> None:
        if not 0.0 <= rate < 1.0:
            raise ValueError("rate must be within [0, 1)")
        self.rate = rate
        self.throttled = 0
        self.passed = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def intercept(
        self, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes] | None:
        """The throttled response for this request, or None to let it through."""
        service = str(environ.get("HTTP_X_AMZ_TARGET", "")).split("_", 1)[0].split(".", 1)[0]
        if service not in _THROTTLED:
            return None
        with self._lock:
            hit = self._random.random() < self.rate
            if hit:
                self.throttled += 1
            else:
                self.passed += 1
        if not hit:
            return None
        error_type, content_type = _THROTTLED[service]
        body = json.dumps({"__type": error_type, "message": "Rate exceeded (injected)"}).encode()
        # The request body is read in full so the client's connection stays usable.
        stream = environ.get("wsgi.input")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if stream is not None and length:
            stream.read(length)
        start_response(
            "400 Bad Request",
            [("Content-Type", content_type), ("Content-Length", str(len(body)))],
        )
        return [body]
