"""Validated request models to domain values."""

from __future__ import annotations

from typing import Any

from cronwheel.domain.instants import parse_instant
from cronwheel.domain.model import HttpTarget, RetryPolicy, SqsTarget, Target
from cronwheel.errors import InvalidArgument

from .schemas import HttpTargetIn, RetryIn, SqsTargetIn, _ScheduleFields

# Long and callback jobs run under Step Functions, which is not built yet.
MAX_INLINE_TIMEOUT_S = 840


def domain_target(target: HttpTargetIn | SqsTargetIn) -> Target:
    if isinstance(target, SqsTargetIn):
        return SqsTarget(queue_url=target.queue_url)
    if target.callback or target.timeout_s > MAX_INLINE_TIMEOUT_S:
        raise InvalidArgument(
            f"callback targets and timeout_s over {MAX_INLINE_TIMEOUT_S} need long-job support, "
            "which this deployment does not have yet",
            field="target.timeout_s" if not target.callback else "target.callback",
        )
    return HttpTarget(
        url=target.url,
        method=target.method,
        headers=dict(target.headers),
        timeout_s=target.timeout_s,
        callback=target.callback,
    )


def domain_retry(retry: RetryIn) -> RetryPolicy:
    return RetryPolicy(**retry.model_dump())


def schedule_fields(body: _ScheduleFields, *, only_given: bool) -> dict[str, Any]:
    """The request's fields as Schedule attributes (for PATCH, only those the client sent)."""
    given = body.model_fields_set if only_given else set(type(body).model_fields)
    fields: dict[str, Any] = {}
    for name in given:
        value = getattr(body, name)
        if name == "target" and value is not None:
            value = domain_target(value)
        elif name == "retry":
            value = domain_retry(value)
        elif name in ("start_at", "end_at") and value is not None:
            value = parse_instant(value, field=name)
        elif name in ("name", "target", "timezone") and value is None:
            raise InvalidArgument(f"{name} cannot be null", field=name)
        fields[name] = value
    return fields
