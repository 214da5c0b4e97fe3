"""The caller's tenant: limits and usage, API keys, signing secrets. Admin actions are audited."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from cronwheel.domain.ids import hash_api_key, new_api_key, new_id, new_signing_secret
from cronwheel.domain.model import Principal, Role, Tenant
from cronwheel.errors import NotFound
from cronwheel.services.auth import require_role
from cronwheel.store.store import ApiKeyListing, Store

LIMIT_FIELDS = ("max_concurrency", "max_executions_per_day", "max_schedules", "priority_weight")


@dataclass(frozen=True)
class Usage:
    running: int
    executions_today: int
    schedules: int


@dataclass(frozen=True)
class NewApiKey:
    listing: ApiKeyListing
    key: str  # shown once, never stored


class TenantService:
    def __init__(self, store: Store) -> None:
        self._store = store

    def _tenant(self, principal: Principal) -> Tenant:
        tenant = self._store.get_tenant(principal.tenant)
        if tenant is None:
            raise NotFound(f"tenant {principal.tenant} not found")
        return tenant

    def describe(self, principal: Principal, now: datetime) -> tuple[Tenant, Usage]:
        tenant = self._tenant(principal)
        daily = self._store.daily_usage(tenant.id, now)
        usage = Usage(
            running=self._store.running_slots(tenant.id),
            # The count the daily quota is checked against (UTC day).
            executions_today=daily.used if daily else 0,
            schedules=self._store.count_schedules(tenant.id),
        )
        return tenant, usage

    def set_limits(self, principal: Principal, limits: dict[str, int], now: datetime) -> Tenant:
        require_role(principal, Role.ADMIN)
        tenant = self._tenant(principal)
        for name, value in limits.items():
            if name in LIMIT_FIELDS:
                setattr(tenant, name, value)
        self._store.update_tenant(tenant)
        self._store.audit(principal, "set_limits", tenant.id, now, dict(limits))
        return tenant

    def signing_secret(self, principal: Principal) -> str:
        require_role(principal, Role.ADMIN)
        return self._tenant(principal).signing_secret

    def rotate_signing_secret(self, principal: Principal, now: datetime) -> str:
        """The new secret signs from now on; the previous one still verifies until the next
        rotation, so targets can switch over without a gap."""
        require_role(principal, Role.ADMIN)
        tenant = self._tenant(principal)
        rotated = replace(tenant, signing_secrets=[new_signing_secret(), tenant.signing_secret])
        self._store.update_tenant(rotated)
        self._store.audit(principal, "rotate_signing_secret", tenant.id, now)
        return rotated.signing_secret

    def create_api_key(self, principal: Principal, role: Role, now: datetime) -> NewApiKey:
        require_role(principal, Role.ADMIN)
        key = new_api_key()
        key_id = new_id("key")
        self._store.put_api_key(
            tenant=principal.tenant, key_hash=hash_api_key(key), key_id=key_id, role=role, now=now
        )
        self._store.audit(principal, "create_api_key", key_id, now, {"role": role.value})
        return NewApiKey(ApiKeyListing(key_id, role, now, False), key)

    def list_api_keys(self, principal: Principal) -> list[ApiKeyListing]:
        require_role(principal, Role.ADMIN)
        return self._store.list_api_keys(principal.tenant)

    def revoke_api_key(self, principal: Principal, key_id: str, now: datetime) -> None:
        require_role(principal, Role.ADMIN)
        if not self._store.revoke_api_key(principal.tenant, key_id):
            raise NotFound(f"API key {key_id} not found")
        self._store.audit(principal, "revoke_api_key", key_id, now)
