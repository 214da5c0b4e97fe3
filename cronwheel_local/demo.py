"""`make run`'s demo: a job two seconds out, fired at a local HTTP target that checks the
signature, then its execution read back through the API."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from cronwheel.domain.signing import verify

from .client import ApiClient


def _target_server(secret: str, called: threading.Event) -> HTTPServer:
    class Target(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            ok = verify(
                [secret],
                self.headers["X-Cronwheel-Timestamp"],
                body,
                self.headers["X-Cronwheel-Signature"],
            )
            doc = json.loads(body)
            print(
                f"  demo target called at {datetime.now(UTC):%H:%M:%S.%f}"[:-3]
                + f": execution {doc['execution_id']}, attempt {doc['attempt']}, "
                f"fencing token {doc['fencing_token']}, signature {'verified' if ok else 'INVALID'}"
            )
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            called.set()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Target)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_demo(url: str, api_key: str, signing_secret: str) -> None:
    called = threading.Event()
    server = _target_server(signing_secret, called)
    client = ApiClient(url, api_key)
    job = client.request(
        "POST",
        "/v1/jobs",
        body={
            "name": "demo",
            "delay_s": 2,
            "target": {"type": "http", "url": f"http://127.0.0.1:{server.server_port}/hook"},
            "payload": {"hello": "cronwheel"},
        },
    )
    print(f"demo: submitted job {job['id']} due at {job['run_at']}")
    called.wait(timeout=15)
    for _ in range(50):
        execution = client.request("GET", f"/v1/executions/{job['execution_id']}")
        if execution["state"] == "succeeded":
            break
        time.sleep(0.1)
    print(
        f"demo: execution {execution['id']} is {execution['state']} after {execution['attempt']} attempt(s)"
    )
    server.shutdown()
