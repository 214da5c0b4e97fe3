"""Calling an HTTP target: one request, bounded by the target's timeout."""

from __future__ import annotations

import time
from dataclasses import dataclass

import urllib3

RESPONSE_EXCERPT_BYTES = 4096


@dataclass(frozen=True)
class HttpResult:
    status: int | None
    excerpt: str | None
    error: str | None
    timed_out: bool
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class HttpCaller:
    def __init__(self) -> None:
        self._pool = urllib3.PoolManager(num_pools=64, maxsize=16, retries=False)

    def call(
        self, *, method: str, url: str, headers: dict[str, str], body: bytes, timeout_s: float
    ) -> HttpResult:
        started = time.monotonic()
        try:
            response = self._pool.request(
                method,
                url,
                body=body,
                headers=headers,
                timeout=urllib3.Timeout(total=timeout_s),
                preload_content=False,
                redirect=False,
            )
            try:
                excerpt = response.read(RESPONSE_EXCERPT_BYTES).decode("utf-8", "replace")
            finally:
                response.release_conn()
            return HttpResult(response.status, excerpt, None, False, _elapsed(started))
        except urllib3.exceptions.NewConnectionError as error:
            # Checked first: urllib3 makes this a subclass of its connect timeout.
            return HttpResult(None, None, f"connection failed: {error}", False, _elapsed(started))
        except (urllib3.exceptions.TimeoutError, TimeoutError):
            return HttpResult(
                None, None, f"no answer within {timeout_s:g} s", True, _elapsed(started)
            )
        except urllib3.exceptions.HTTPError as error:
            return HttpResult(None, None, f"connection failed: {error}", False, _elapsed(started))


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
