"""Runtime settings, built once per process from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from cronwheel.store.queues import DISPATCH
from cronwheel.store.tables import ALL_TABLES

DEAD_TOPIC_ENV = "CRONWHEEL_DEAD_TOPIC_ARN"
LONG_JOB_MACHINE_ENV = "CRONWHEEL_LONG_JOB_STATE_MACHINE_ARN"


class SettingsError(RuntimeError):
    """A required environment variable is missing or malformed."""


def _require(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise SettingsError(f"environment variable {name} is required but not set")
    return value


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SettingsError(
            f"environment variable {name} must be an integer, got {raw!r}"
        ) from None


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes"}:
        return True
    if raw in {"0", "false", "no"}:
        return False
    raise SettingsError(f"environment variable {name} must be true or false, got {raw!r}")


@dataclass(frozen=True)
class Settings:
    stage: str
    region: str
    table_names: Mapping[str, str]
    dispatch_queue_url: str
    shards: int
    lookahead_s: int
    shard_lease_s: int
    delivery_grace_s: int
    worker_lease_slack_s: int
    allow_private_egress: bool
    history_retention_days: int = 30
    # First attempts started per second by one dispatcher runtime before tenants are paced by
    # weight (0: no pacing). See domain/pacing.py.
    dispatch_rate_per_s: int = 0
    endpoint_url: str | None = None
    dead_letter_topic_arn: str | None = None  # where `dead` executions are announced
    long_job_state_machine_arn: str | None = None  # runs callback and long jobs

    @property
    def history_retention(self) -> timedelta:
        """How long finished executions are kept before DynamoDB's TTL archives them."""
        return timedelta(days=self.history_retention_days)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read every setting, failing fast with the name of anything missing."""
        env = os.environ if env is None else env
        shards = _int(env, "CRONWHEEL_SHARDS", 0)
        if shards < 1:
            raise SettingsError("environment variable CRONWHEEL_SHARDS must be a positive integer")
        lookahead_s = _int(env, "CRONWHEEL_LOOKAHEAD_S", 90)
        if not 1 <= lookahead_s <= 900:
            raise SettingsError("CRONWHEEL_LOOKAHEAD_S must be within 1-900 (SQS delay reach)")
        return cls(
            stage=env.get("CRONWHEEL_STAGE", "dev"),
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            table_names={t.logical_name: _require(env, t.env_var) for t in ALL_TABLES},
            dispatch_queue_url=_require(env, DISPATCH.env_var),
            shards=shards,
            lookahead_s=lookahead_s,
            shard_lease_s=_int(env, "CRONWHEEL_SHARD_LEASE_S", 50),
            delivery_grace_s=_int(env, "CRONWHEEL_DELIVERY_GRACE_S", 120),
            worker_lease_slack_s=_int(env, "CRONWHEEL_WORKER_LEASE_SLACK_S", 30),
            allow_private_egress=_bool(env, "CRONWHEEL_ALLOW_PRIVATE_EGRESS", False),
            history_retention_days=_int(env, "CRONWHEEL_HISTORY_RETENTION_DAYS", 30),
            dispatch_rate_per_s=_int(env, "CRONWHEEL_DISPATCH_RATE_PER_S", 0),
            endpoint_url=env.get("AWS_ENDPOINT_URL") or None,
            dead_letter_topic_arn=env.get(DEAD_TOPIC_ENV, "").strip() or None,
            long_job_state_machine_arn=env.get(LONG_JOB_MACHINE_ENV, "").strip() or None,
        )

    @staticmethod
    def environment(
        *,
        stage: str,
        table_names: Mapping[str, str],
        dispatch_queue_url: str,
        shards: int,
        lookahead_s: int,
        allow_private_egress: bool,
        dead_letter_topic_arn: str | None = None,
        long_job_state_machine_arn: str | None = None,
    ) -> dict[str, str]:
        """The environment a deployment gives every function (used by the CDK and local stack)."""
        env = {t.env_var: table_names[t.logical_name] for t in ALL_TABLES}
        env.update(
            {
                "CRONWHEEL_STAGE": stage,
                DISPATCH.env_var: dispatch_queue_url,
                "CRONWHEEL_SHARDS": str(shards),
                "CRONWHEEL_LOOKAHEAD_S": str(lookahead_s),
                "CRONWHEEL_ALLOW_PRIVATE_EGRESS": "true" if allow_private_egress else "false",
            }
        )
        if dead_letter_topic_arn:
            env[DEAD_TOPIC_ENV] = dead_letter_topic_arn
        if long_job_state_machine_arn:
            env[LONG_JOB_MACHINE_ENV] = long_job_state_machine_arn
        return env
