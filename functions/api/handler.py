"""API Gateway proxy handler for the REST API."""

from __future__ import annotations

import base64
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from . import errors
from .routers import audit, executions, health, jobs, schedules, tenant

MAX_BODY_BYTES = 256 * 1024

logger = Logger(service="cronwheel-api")
app = APIGatewayRestResolver(enable_validation=True)
for module in (health, jobs, executions, schedules, audit, tenant):
    app.include_router(module.router)
errors.register(app)


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi() -> dict[str, Any]:
    return openapi_document()


def openapi_document() -> dict[str, Any]:
    import json

    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(title="cronwheel", version="1")
    )
    return document


def _body_size(event: dict[str, Any]) -> int:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return len(base64.b64decode(body))
    return len(body.encode())


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if _body_size(event) > MAX_BODY_BYTES:
        too_large = errors.error_response(
            "payload_too_large", f"request body is over {MAX_BODY_BYTES} bytes"
        )
        return {
            "statusCode": too_large.status_code,
            "headers": {"Content-Type": "application/json"},
            "body": too_large.body,
        }
    return app.resolve(event, context)
