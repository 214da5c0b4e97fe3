"""Who is calling, from the bearer API key; and what their role allows."""

from __future__ import annotations

from cronwheel.domain.ids import hash_api_key
from cronwheel.domain.model import Principal, Role
from cronwheel.errors import PermissionDenied, Unauthenticated
from cronwheel.store.store import Store


def authenticate(store: Store, authorization: str | None) -> Principal:
    """Resolve `Authorization: Bearer <key>` to a principal, or raise Unauthenticated."""
    if not authorization:
        raise Unauthenticated("missing Authorization header; send 'Authorization: Bearer <key>'")
    scheme, _, key = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthenticated("Authorization header must be 'Bearer <api key>'")
    record = store.find_api_key(hash_api_key(key.strip()))
    if record is None or record.revoked:
        raise Unauthenticated("API key is not valid")
    return Principal(tenant=record.tenant, role=record.role, key_id=record.key_id)


def require_role(principal: Principal, needed: Role) -> None:
    if not principal.role.allows(needed):
        raise PermissionDenied(
            f"this action needs the {needed.value} role; the key is {principal.role.value}"
        )


def require_own_tenant(principal: Principal, named: str | None) -> None:
    """A body may name the tenant, but only the caller's own."""
    if named is not None and named != principal.tenant:
        raise PermissionDenied("the request names another tenant", field="tenant")
