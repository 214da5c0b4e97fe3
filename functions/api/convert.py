"""Validated request models to domain values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cronwheel.domain.instants import parse_instant
from cronwheel.domain.model import (
    HeaderValue,
    HttpTarget,
    RetryPolicy,
    SecretRef,
    SqsTarget,
    Target,
)
from cronwheel.errors import InvalidArgument

from .schemas import HttpTargetIn, RetryIn, SecretRefIn, SqsTargetIn, _ScheduleFields


def domain_target(target: HttpTargetIn | SqsTargetIn) -> Target:
    if isinstance(target, SqsTargetIn):
        return SqsTarget(queue_url=target.queue_url, rate_limit_per_s=target.rate_limit_per_s)
    # Callback targets and timeout_s over 840 s run as long jobs (docs/long-jobs.md).
    return HttpTarget(
        url=target.url,
        method=target.method,
        headers=domain_headers(target.headers),
        timeout_s=target.timeout_s,
        callback=target.callback,
        heartbeat_s=target.heartbeat_s,
        rate_limit_per_s=target.rate_limit_per_s,
    )


def domain_headers(headers: Mapping[str, str | SecretRefIn]) -> dict[str, HeaderValue]:
    """A secret header becomes a reference; its value is read only when the target is called."""
    return {
        name: SecretRef(value.secret) if isinstance(value, SecretRefIn) else value
        for name, value in headers.items()
    }


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
