from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from cronwheel.domain.instants import format_instant
from cronwheel.domain.model import Role
from cronwheel.runtime import runtime
from cronwheel.services.auth import require_role

from ..context import principal
from ..schemas import AuditPage, AuditRecordOut

router = APIGatewayRouter()


@router.get("/v1/audit")
def list_audit(limit: Annotated[int, Query(ge=1, le=500)] = 50) -> AuditPage:
    """Manual actions of the caller's tenant, newest first (admins only)."""
    caller = principal(router)
    require_role(caller, Role.ADMIN)
    records = runtime().store.list_audit(caller.tenant, limit)
    return AuditPage(
        items=[AuditRecordOut(**{**r, "at": format_instant(r["at"])}) for r in records],
        next_cursor=None,
    )
