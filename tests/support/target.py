"""A recording HTTP target on 127.0.0.1 for tests and benchmarks."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float  # time.time()

    @property
    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.body)
        return doc


class RecordingTarget:
    """Paths choose the behaviour: `/ok`, `/fail` (always 500), `/flaky/<n>` (500 for the first
    n calls of each execution, then 200), `/slow/<seconds>`."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.max_in_flight: dict[str, int] = {}  # by tenant, the most calls open at once
        self._in_flight: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls_for(self, execution_id: str) -> list[Call]:
        with self._lock:
            return [
                c for c in self.calls if c.headers.get("X-Cronwheel-Execution-Id") == execution_id
            ]

    def _status_for(self, path: str, execution_id: str) -> int:
        parts = path.strip("/").split("/")
        if parts[0] == "fail":
            return 500
        if parts[0] == "flaky":
            earlier = len(self.calls_for(execution_id)) - 1
            return 500 if earlier < int(parts[1]) else 200
        if parts[0] == "slow":
            time.sleep(float(parts[1]))
        return 200

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        target = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                call = Call(self.path, dict(self.headers.items()), body, time.time())
                tenant = str(json.loads(body or b"{}").get("tenant", ""))
                with target._lock:
                    target.calls.append(call)
                    target._in_flight[tenant] = target._in_flight.get(tenant, 0) + 1
                    target.max_in_flight[tenant] = max(
                        target.max_in_flight.get(tenant, 0), target._in_flight[tenant]
                    )
                try:
                    status = target._status_for(
                        self.path, call.headers.get("X-Cronwheel-Execution-Id", "")
                    )
                finally:
                    with target._lock:
                        target._in_flight[tenant] -= 1
                answer = json.dumps({"status": status}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@contextmanager
def recording_target() -> Iterator[RecordingTarget]:
    target = RecordingTarget()
    try:
        yield target
    finally:
        target.close()


def wait_for(predicate: Any, timeout_s: float = 20.0, interval_s: float = 0.05) -> Any:
    """Poll with a deadline (tests never sleep a fixed time waiting for the scheduler)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(interval_s)
