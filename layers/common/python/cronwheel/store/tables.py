"""The DynamoDB tables, defined once.

The CDK builds its tables from these specs, the local stack creates its tables from them, and a
test checks that the PynamoDB models in `models.py` agree with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

KeyType = Literal["S", "N"]


@dataclass(frozen=True)
class Key:
    name: str
    type: KeyType = "S"


@dataclass(frozen=True)
class Index:
    name: str
    hash_key: Key
    range_key: Key | None = None


@dataclass(frozen=True)
class TableSpec:
    """One table: its logical name, keys, global secondary indexes and TTL attribute."""

    logical_name: str
    hash_key: Key
    range_key: Key | None = None
    indexes: tuple[Index, ...] = field(default_factory=tuple)
    ttl_attribute: str | None = None

    @property
    def env_var(self) -> str:
        """Environment variable that carries the deployed table name."""
        return f"CRONWHEEL_TABLE_{self.logical_name.upper()}"

    def attribute_definitions(self) -> dict[str, KeyType]:
        keys = [self.hash_key, self.range_key]
        for index in self.indexes:
            keys += [index.hash_key, index.range_key]
        return {key.name: key.type for key in keys if key is not None}


SCHEDULES = TableSpec(
    "schedules",
    hash_key=Key("id"),
    indexes=(
        # Sharded by hash(schedule_id) % shards, never by time: a top-of-hour burst spreads evenly.
        Index("due", Key("due_shard", "N"), Key("next_run_at")),
        Index("by_tenant_name", Key("tenant"), Key("name")),
        # Dependency schedules by their upstream schedule: who runs after this one succeeds.
        Index("by_after", Key("after"), Key("id")),
    ),
)

EXECUTIONS = TableSpec(
    "executions",
    hash_key=Key("id"),
    indexes=(
        Index("by_tenant", Key("tenant"), Key("scheduled_for")),
        Index("by_schedule", Key("schedule_id"), Key("scheduled_for")),
        Index("by_job", Key("job_id"), Key("scheduled_for")),
        Index("by_status", Key("tenant_state"), Key("scheduled_for")),
        # Sparse: only executions the sweeper must look at again (lease, delivery, far retry).
        Index("sweep", Key("sweep_shard", "N"), Key("sweep_at")),
    ),
    ttl_attribute="expires_at",
)

LEASES = TableSpec("leases", hash_key=Key("name"))

TENANTS = TableSpec("tenants", hash_key=Key("id"))

API_KEYS = TableSpec(
    "api_keys",
    hash_key=Key("key_hash"),
    indexes=(Index("by_tenant", Key("tenant"), Key("key_id")),),
)

AUDIT = TableSpec("audit", hash_key=Key("tenant"), range_key=Key("sk"))

IDEMPOTENCY = TableSpec("idempotency", hash_key=Key("key"), ttl_attribute="expires_at")

ALL_TABLES: tuple[TableSpec, ...] = (
    SCHEDULES,
    EXECUTIONS,
    LEASES,
    TENANTS,
    API_KEYS,
    AUDIT,
    IDEMPOTENCY,
)
