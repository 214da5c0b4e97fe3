from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from cronwheel.domain.instants import format_instant
from cronwheel.domain.model import Role
from cronwheel.runtime import runtime
from cronwheel.services.tenants import TenantService
from cronwheel.store.store import ApiKeyListing

from ..context import principal

router = APIGatewayRouter()


class LimitsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_concurrency: StrictInt | None = Field(None, ge=1, le=100_000)
    max_executions_per_day: StrictInt | None = Field(None, ge=1, le=1_000_000_000)
    max_schedules: StrictInt | None = Field(None, ge=1, le=10_000_000)
    priority_weight: StrictInt | None = Field(None, ge=1, le=1000)


class ApiKeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Role


def _service() -> TenantService:
    return TenantService(runtime().store)


def _key(listing: ApiKeyListing) -> dict[str, Any]:
    return {
        "key_id": listing.key_id,
        "role": listing.role.value,
        "created_at": format_instant(listing.created_at),
        "revoked": listing.revoked,
    }


@router.get("/v1/tenant")
def get_tenant() -> dict[str, Any]:
    tenant, usage = _service().describe(principal(router), runtime().clock.now())
    return {
        "id": tenant.id,
        "limits": {
            "max_concurrency": tenant.max_concurrency,
            "max_executions_per_day": tenant.max_executions_per_day,
            "max_schedules": tenant.max_schedules,
            "priority_weight": tenant.priority_weight,
        },
        "usage": {
            "running": usage.running,
            "executions_today": usage.executions_today,
            "schedules": usage.schedules,
        },
    }


@router.patch("/v1/tenant/limits")
def set_limits(body: Annotated[LimitsIn, Body()]) -> dict[str, Any]:
    limits = body.model_dump(exclude_none=True)
    _service().set_limits(principal(router), limits, runtime().clock.now())
    return get_tenant()


@router.get("/v1/tenant/signing-secret")
def get_signing_secret() -> dict[str, Any]:
    return {"signing_secret": _service().signing_secret(principal(router))}


@router.post("/v1/tenant/signing-secret:rotate")
def rotate_signing_secret() -> dict[str, Any]:
    return {
        "signing_secret": _service().rotate_signing_secret(principal(router), runtime().clock.now())
    }


@router.post(
    "/v1/tenant/api-keys", responses={201: {"description": "created; the key is shown once"}}
)
def create_api_key(body: Annotated[ApiKeyIn, Body()]) -> Response[dict[str, Any]]:
    created = _service().create_api_key(principal(router), body.role, runtime().clock.now())
    return Response(
        status_code=201,
        content_type=content_types.APPLICATION_JSON,
        body={**_key(created.listing), "key": created.key},
    )


@router.get("/v1/tenant/api-keys")
def list_api_keys() -> dict[str, Any]:
    return {
        "items": [_key(k) for k in _service().list_api_keys(principal(router))],
        "next_cursor": None,
    }


@router.delete("/v1/tenant/api-keys/<key_id>", responses={204: {"description": "revoked"}})
def revoke_api_key(key_id: Annotated[str, Path(max_length=64)]) -> Response[None]:
    _service().revoke_api_key(principal(router), key_id, runtime().clock.now())
    return Response(status_code=204)
