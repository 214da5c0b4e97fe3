"""The local stack's config file (API.md, "The local stack")."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cronwheel.domain.ids import new_api_key, new_signing_secret
from cronwheel.domain.model import Role


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ApiKeyConfig:
    key: str
    role: Role


@dataclass(frozen=True)
class TenantConfig:
    id: str
    signing_secret: str
    api_keys: tuple[ApiKeyConfig, ...] = ()
    max_concurrency: int = 100


@dataclass(frozen=True)
class LocalConfig:
    tenants: tuple[TenantConfig, ...] = field(default_factory=tuple)
    shards: int = 4
    tick_interval_s: float = 1.0
    lookahead_s: int = 10
    sweep_interval_s: float = 2.0
    delivery_grace_s: int = 60
    dispatchers: int = 4
    # About what the emulator sustains; beyond it tenants are paced by weight (domain/pacing.py).
    dispatch_rate_per_s: int = 16


def _tenant(doc: Any, index: int) -> TenantConfig:
    where = f"tenants[{index}]"
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or not doc["id"]:
        raise ConfigError(f"{where}: each tenant needs a string 'id'")
    keys = []
    for key_index, key_doc in enumerate(doc.get("api_keys", [])):
        try:
            keys.append(ApiKeyConfig(key=str(key_doc["key"]), role=Role(key_doc["role"])))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                f"{where}.api_keys[{key_index}]: needs 'key' and a 'role' of viewer|operator|admin"
            ) from None
    return TenantConfig(
        id=doc["id"],
        signing_secret=str(doc.get("signing_secret") or new_signing_secret()),
        api_keys=tuple(keys),
        max_concurrency=int(doc.get("max_concurrency", 100)),
    )


def parse_config(doc: Any) -> LocalConfig:
    if not isinstance(doc, dict):
        raise ConfigError("the config must be a JSON object")
    defaults = LocalConfig()
    try:
        config = LocalConfig(
            tenants=tuple(_tenant(t, i) for i, t in enumerate(doc.get("tenants", []))),
            shards=int(doc.get("shards", defaults.shards)),
            tick_interval_s=float(doc.get("tick_interval_s", defaults.tick_interval_s)),
            lookahead_s=int(doc.get("lookahead_s", defaults.lookahead_s)),
            sweep_interval_s=float(doc.get("sweep_interval_s", defaults.sweep_interval_s)),
            delivery_grace_s=int(doc.get("delivery_grace_s", defaults.delivery_grace_s)),
            dispatchers=int(doc.get("dispatchers", defaults.dispatchers)),
            dispatch_rate_per_s=int(doc.get("dispatch_rate_per_s", defaults.dispatch_rate_per_s)),
        )
    except (TypeError, ValueError) as error:
        raise ConfigError(f"invalid number in config: {error}") from None
    if config.shards < 1 or config.dispatchers < 1 or config.tick_interval_s <= 0:
        raise ConfigError("shards, dispatchers and tick_interval_s must be positive")
    return config


def load_config(path: str | Path) -> LocalConfig:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path} is not valid JSON: {error}") from None
    return parse_config(doc)


def development_config() -> tuple[LocalConfig, str]:
    """One demo tenant with a fresh admin key (returned so it can be printed)."""
    key = new_api_key()
    tenant = TenantConfig(
        id="demo",
        signing_secret=new_signing_secret(),
        api_keys=(ApiKeyConfig(key=key, role=Role.ADMIN),),
    )
    return LocalConfig(tenants=(tenant,)), key


def config_document(config: LocalConfig) -> dict[str, Any]:
    return {
        "shards": config.shards,
        "tick_interval_s": config.tick_interval_s,
        "tenants": [
            {
                "id": t.id,
                "max_concurrency": t.max_concurrency,
                "signing_secret": t.signing_secret,
                "api_keys": [{"key": k.key, "role": k.role.value} for k in t.api_keys],
            }
            for t in config.tenants
        ],
    }
