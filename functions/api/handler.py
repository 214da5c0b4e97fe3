"""API Gateway proxy handler for the REST API."""

from __future__ import annotations

import base64
import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import errors
from .routers import audit, executions, health, jobs, schedules, tenant

MAX_BODY_BYTES = 256 * 1024
# Far beyond any real payload, far below the depth at which parsing or serialising a document
# would exhaust Python's recursion limit and fail as a 5xx.
MAX_JSON_DEPTH = 64
# Served without the authorizer (infra/api.py); every other route needs an API key.
PUBLIC_PATHS = frozenset({"/v1/health"})
_SECURITY_SCHEME = "apiKey"
_TOO_DEEP = object()

logger = Logger(service="cronwheel-api")
app = APIGatewayRestResolver(enable_validation=True)
for module in (health, jobs, executions, schedules, audit, tenant):
    app.include_router(module.router)
errors.register(app)


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi() -> dict[str, Any]:
    return openapi_document()


def openapi_document() -> dict[str, Any]:
    """The API as it behaves: bearer keys (but on public paths), the error format of API.md on
    every operation, and no body on a 204."""
    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(
            title="cronwheel",
            version="1",
            security_schemes={
                _SECURITY_SCHEME: HTTPBearer(description="Authorization: Bearer <API key>")
            },
            security=[{_SECURITY_SCHEME: []}],
        )
    )
    for path, operations in document["paths"].items():
        for operation in operations.values():
            if path in PUBLIC_PATHS:
                operation["security"] = []
            operation.get("responses", {}).get("204", {}).pop("content", None)
    errors.document_errors(document, PUBLIC_PATHS)
    return document


def _body(event: dict[str, Any]) -> bytes:
    body = event.get("body") or ""
    return base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()


def _depth(document: Any) -> int:
    """How deeply a parsed JSON document nests (a scalar is 0), without recursing."""
    deepest, pending = 0, [(document, 0)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, depth + 1)
            pending.extend((child, depth + 1) for child in value)
    return deepest


def _refusal(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    response = errors.error_response(code, message, field)
    return {
        "statusCode": response.status_code,
        "headers": {"Content-Type": "application/json"},
        "body": response.body,
    }


def _refuse_body(event: dict[str, Any], body: bytes) -> dict[str, Any] | None:
    """Limits every route shares, checked before any route parses the body: its size, how
    deeply it nests, and that a `tenant` it names is the caller's (docs/security.md)."""
    if len(body) > MAX_BODY_BYTES:
        return _refusal("payload_too_large", f"request body is over {MAX_BODY_BYTES} bytes")
    if not body:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None  # not JSON: the route answers 400 if it takes a body
    except RecursionError:
        document = _TOO_DEEP
    if document is _TOO_DEEP or _depth(document) > MAX_JSON_DEPTH:
        return _refusal("invalid_argument", f"request body nests deeper than {MAX_JSON_DEPTH}")
    caller = ((event.get("requestContext") or {}).get("authorizer") or {}).get("tenant")
    named = document.get("tenant") if isinstance(document, dict) else None
    if caller and isinstance(named, str) and named != caller:
        return _refusal("permission_denied", "the request names another tenant", "tenant")
    return None


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refusal = _refuse_body(event, _body(event))
    return refusal if refusal is not None else app.resolve(event, context)
