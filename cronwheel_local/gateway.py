"""API Gateway, emulated: HTTP requests become REST proxy events for the real handlers."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .lambda_context import LocalContext

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
PUBLIC_PATHS = frozenset({"/v1/health"})
# API Gateway caches an authorizer's answer per identity (Authorization header); so do we.
AUTHORIZER_CACHE_S = 5.0


def _error(status: int, code: str, message: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps({"error": {"code": code, "message": message}}),
    }


def proxy_event(
    method: str, raw_path: str, headers: dict[str, str], body: bytes, source_ip: str
) -> dict[str, Any]:
    parts = urlsplit(raw_path)
    query = parse_qs(parts.query, keep_blank_values=True)
    text = body.decode("utf-8", "replace") if body else None
    return {
        "resource": "/{proxy+}",
        "path": parts.path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": {"proxy": parts.path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": f"/local{parts.path}",
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": source_ip},
        },
        "body": text,
        "isBase64Encoded": False,
    }


class _Server(ThreadingHTTPServer):
    # The standard library listens with a backlog of 5: a burst of clients would see
    # connections reset, which API Gateway never does.
    request_queue_size = 256
    daemon_threads = True


class Gateway:
    """Serves the API: authorizer first (as API Gateway does), then the API handler."""

    def __init__(self, host: str, port: int, api: Handler, authorizer: Handler) -> None:
        self._policies: dict[str, tuple[float, dict[str, Any]]] = {}
        self._api = api
        self._authorizer = authorizer
        self._server = _Server((host, port), self._request_handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        if event["path"] not in PUBLIC_PATHS:
            auth_event = {
                "type": "REQUEST",
                "methodArn": "arn:aws:execute-api:local:000000000000:local/local/"
                f"{event['httpMethod']}{event['path']}",
                "headers": event["headers"],
            }
            identity = next(
                (v for k, v in event["headers"].items() if k.lower() == "authorization"), ""
            )
            cached = self._policies.get(identity) if identity else None
            if cached and cached[0] > time.monotonic():
                policy = cached[1]
            else:
                try:
                    policy = self._authorizer(auth_event, LocalContext("cronwheel-authorizer"))
                except PermissionError:
                    return _error(401, "unauthenticated", "missing or invalid API key")
                if identity:
                    self._policies[identity] = (time.monotonic() + AUTHORIZER_CACHE_S, policy)
            event["requestContext"]["authorizer"] = {
                "principalId": policy["principalId"],
                **policy["context"],
            }
        return self._api(event, LocalContext("cronwheel-api"))

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        gateway = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items()}
                event = proxy_event(self.command, self.path, headers, body, self.client_address[0])
                try:
                    response = gateway.invoke(event)
                except Exception:  # the gateway answers 502 when the integration fails, as AWS does
                    response = _error(502, "internal", "the API handler failed")
                payload = response.get("body") or ""
                data = (
                    base64.b64decode(payload)
                    if response.get("isBase64Encoded")
                    else payload.encode()
                )
                self.send_response(int(response.get("statusCode", 200)))
                sent = set()
                for name, value in (response.get("headers") or {}).items():
                    self.send_header(name, str(value))
                    sent.add(name.lower())
                for name, values in (response.get("multiValueHeaders") or {}).items():
                    if name.lower() not in sent:
                        for value in values:
                            self.send_header(name, str(value))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return RequestHandler
