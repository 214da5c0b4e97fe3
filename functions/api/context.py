"""The caller, as the authorizer established it (API Gateway puts its context on the event)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

from cronwheel.domain.model import Principal, Role
from cronwheel.errors import Unauthenticated


def principal(router: BaseRouter) -> Principal:
    context = router.current_event.raw_event.get("requestContext", {}).get("authorizer") or {}
    tenant, role, key_id = context.get("tenant"), context.get("role"), context.get("key_id")
    if not (tenant and role and key_id):
        raise Unauthenticated("missing or invalid API key")
    return Principal(tenant=tenant, role=Role(role), key_id=key_id)
