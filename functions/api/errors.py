"""Every error becomes `{"error": {"code", "message", "field"}}` here, and only here."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from cronwheel.domain.cron import ScheduleExpressionError
from cronwheel.errors import CronwheelError

logger = Logger(child=True)

STATUS_BY_CODE = {
    "invalid_argument": 400,
    "unauthenticated": 401,
    "permission_denied": 403,
    "not_found": 404,
    "already_exists": 409,
    "conflict": 409,
    "failed_precondition": 412,
    "payload_too_large": 413,
    "resource_exhausted": 429,
    "internal": 500,
}


def error_document(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if field:
        body["field"] = field
    return {"error": body}


def error_response(code: str, message: str, field: str | None = None) -> Response[Any]:
    return Response(
        status_code=STATUS_BY_CODE[code],
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(error_document(code, message, field)),
    )


def _field_of(location: tuple[Any, ...]) -> str | None:
    # Pydantic locations look like ("body", "target", "http", "url"); drop the source and the
    # discriminator tag so the field reads as the client wrote it.
    parts = [str(p) for p in location[1:] if p not in ("http", "sqs")]
    return ".".join(parts) or None


def _validation_message(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    if kind == "json_invalid":
        return "request body is not valid JSON"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "union_tag_invalid":
        return "target.type must be 'http' or 'sqs'"
    if kind == "union_tag_not_found":
        return "target.type is required ('http' or 'sqs')"
    if kind == "missing":
        return "field is required"
    message = str(error.get("msg", "invalid value"))
    return message.removeprefix("Value error, ")


def register(app: APIGatewayRestResolver) -> None:
    @app.exception_handler(CronwheelError)
    def _domain(error: CronwheelError) -> Response[Any]:
        return error_response(error.code, error.message, error.field)

    @app.exception_handler(ScheduleExpressionError)
    def _expression(error: ScheduleExpressionError) -> Response[Any]:
        return error_response("invalid_argument", str(error.message), error.field)

    @app.exception_handler(RequestValidationError)
    def _invalid(error: RequestValidationError) -> Response[Any]:
        errors = error.errors()
        first = errors[0] if errors else {}
        field = _field_of(tuple(first.get("loc", ())))
        message = _validation_message(first)
        if field:
            message = f"{field}: {message}"
        return error_response("invalid_argument", message, field)

    @app.not_found
    def _not_found(_: NotFoundError) -> Response[Any]:
        return error_response(
            "not_found", f"no route for {app.current_event.http_method} {app.current_event.path}"
        )

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response[Any]:
        logger.exception("unhandled error")
        return error_response("internal", "internal error; the request may be retried")
