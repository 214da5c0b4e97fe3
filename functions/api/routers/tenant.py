from __future__ import annotations

import json
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from cronwheel.domain.instants import format_instant
from cronwheel.runtime import runtime
from cronwheel.services.tenants import TenantService
from cronwheel.store.store import ApiKeyListing

from ..context import principal
from ..schemas import (
    ApiKeyIn,
    ApiKeyOut,
    ApiKeyPage,
    LimitsIn,
    LimitsOut,
    NewApiKeyOut,
    SigningSecretOut,
    TenantOut,
    UsageOut,
)

router = APIGatewayRouter()


def _service() -> TenantService:
    return TenantService(runtime().store)


def _key(listing: ApiKeyListing) -> ApiKeyOut:
    return ApiKeyOut(
        key_id=listing.key_id,
        role=listing.role,
        created_at=format_instant(listing.created_at),
        revoked=listing.revoked,
    )


@router.get("/v1/tenant")
def get_tenant() -> TenantOut:
    tenant, usage = _service().describe(principal(router), runtime().clock.now())
    return TenantOut(
        id=tenant.id,
        limits=LimitsOut(
            max_concurrency=tenant.max_concurrency,
            max_executions_per_day=tenant.max_executions_per_day,
            max_schedules=tenant.max_schedules,
            priority_weight=tenant.priority_weight,
        ),
        usage=UsageOut(
            running=usage.running,
            executions_today=usage.executions_today,
            schedules=usage.schedules,
        ),
    )


@router.patch("/v1/tenant/limits")
def set_limits(body: Annotated[LimitsIn, Body()]) -> TenantOut:
    limits = body.model_dump(exclude_none=True, exclude={"tenant"})
    _service().set_limits(principal(router), limits, runtime().clock.now())
    return get_tenant()


@router.get("/v1/tenant/signing-secret")
def get_signing_secret() -> SigningSecretOut:
    return SigningSecretOut(signing_secret=_service().signing_secret(principal(router)))


@router.post("/v1/tenant/signing-secret:rotate")
def rotate_signing_secret() -> SigningSecretOut:
    rotated = _service().rotate_signing_secret(principal(router), runtime().clock.now())
    return SigningSecretOut(signing_secret=rotated)


@router.post(
    "/v1/tenant/api-keys", responses={201: {"description": "created; the key is shown once"}}
)
def create_api_key(body: Annotated[ApiKeyIn, Body()]) -> Response[NewApiKeyOut]:
    created = _service().create_api_key(principal(router), body.role, runtime().clock.now())
    shown = NewApiKeyOut(**_key(created.listing).model_dump(), key=created.key)
    return Response(
        status_code=201,
        content_type=content_types.APPLICATION_JSON,
        body=json.loads(shown.model_dump_json()),
    )


@router.get("/v1/tenant/api-keys")
def list_api_keys() -> ApiKeyPage:
    listings = _service().list_api_keys(principal(router))
    return ApiKeyPage(items=[_key(k) for k in listings], next_cursor=None)


@router.delete("/v1/tenant/api-keys/<key_id>", responses={204: {"description": "revoked"}})
def revoke_api_key(key_id: Annotated[str, Path(max_length=64)]) -> Response[None]:
    _service().revoke_api_key(principal(router), key_id, runtime().clock.now())
    return Response(status_code=204)
