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

from .schemas import ErrorOut

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


# What each documented error status means; every authenticated operation may answer any of them
# (API Gateway itself answers 401/403/404/413/429 in the same format, see infra/api.py).
ERROR_RESPONSES = {
    400: "invalid_argument: malformed body, unknown field or value out of range; `field` names it",
    401: "unauthenticated: no API key, an unknown one or a revoked one",
    403: "permission_denied: the key's role does not allow this, or the body names another tenant",
    404: "not_found: no such record in the caller's tenant (another tenant's record is reported "
    "the same way), or no such route",
    409: "already_exists (name taken) or conflict (changed meanwhile, stale fencing token, "
    "idempotency key reused with another body)",
    412: "failed_precondition: If-Match is stale, or the record's state does not allow this",
    413: "payload_too_large: request body over 256 KiB, or payload over 64 KiB serialised",
    429: "resource_exhausted: a quota or the request rate is exceeded",
}
# Needing no key, a public operation can only be refused for its size or its rate.
PUBLIC_ERROR_STATUSES = (413, 429)
_ERROR_SCHEMA_REF = "#/components/schemas/{model}"


def document_errors(document: dict[str, Any], public_paths: frozenset[str]) -> None:
    """Make the OpenAPI document say what the API answers on error: the error format above for
    every status in ERROR_RESPONSES, and no 422 (Powertools documents one for its validation,
    which `register` turns into a 400)."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    error_schema = ErrorOut.model_json_schema(ref_template=_ERROR_SCHEMA_REF)
    schemas.update(error_schema.pop("$defs", {}))
    schemas["ErrorOut"] = error_schema
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(name, None)
    for path, operations in document.get("paths", {}).items():
        statuses = PUBLIC_ERROR_STATUSES if path in public_paths else tuple(ERROR_RESPONSES)
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status in statuses:
                responses[str(status)] = {
                    "description": ERROR_RESPONSES[status],
                    "content": {
                        content_types.APPLICATION_JSON: {
                            "schema": {"$ref": _ERROR_SCHEMA_REF.format(model="ErrorOut")}
                        }
                    },
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


def _field_of(error: dict[str, Any]) -> str | None:
    if error.get("type") == "json_invalid":
        return None  # the body as a whole is at fault
    # Pydantic locations look like ("body", "target", "http", "url"), or for a bad key of a
    # mapping ("body", "labels", "<the key>", "[key]"); drop the source, the discriminator tag,
    # and a bad key with its marker (the mapping is at fault), so the field reads as the client
    # wrote it.
    location = tuple(error.get("loc", ()))
    if location[-1:] == ("[key]",):
        location = location[:-2]
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
    message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
    if tuple(error.get("loc", ()))[-1:] == ("[key]",):
        return f"a key: {message}"
    return message


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
        field = _field_of(first)
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
