"""Stage settings: one typed, frozen object per stage, read from the `cdk.json` context.

`cdk.json` holds `cronwheel:defaults` (every field) and `cronwheel:stages` (per-stage overrides).
Unknown keys, missing keys and out-of-range values fail synthesis with a message that names them,
so a typo in `cdk.json` never deploys silently with a default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_logs as logs

DEFAULTS_KEY = "cronwheel:defaults"
STAGES_KEY = "cronwheel:stages"
STAGE_KEY = "stage"

# CloudWatch Logs accepts only these retention periods.
_RETENTION_BY_DAYS: dict[int, logs.RetentionDays] = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
}


# Keys that may be absent (a JSON null does not survive the trip through the CDK context).
_OPTIONAL: dict[str, Any] = {"account": None, "region": None}


class StageConfigError(ValueError):
    """The `cdk.json` stage configuration is missing, unknown or out of range."""


@dataclass(frozen=True)
class AlarmThresholds:
    """An alarm fires when its metric is strictly greater than the threshold."""

    fire_lag_p99_ms: int
    dlq_depth: int
    dead: int
    tick_errors: int
    lease_takeovers: int


@dataclass(frozen=True)
class StageSettings:
    """Everything that differs between stages. Built once by `load_stage`."""

    name: str
    account: str | None
    region: str | None
    # Firing path (passed to the functions through `Settings.environment`).
    shards: int
    lookahead_s: int
    shard_lease_s: int
    delivery_grace_s: int
    worker_lease_slack_s: int
    allow_private_egress: bool
    # Functions.
    lambda_memory_mb: int
    dispatch_max_concurrency: int
    # First attempts one dispatcher container starts per second before tenants are paced by
    # weight (docs/tenancy.md).
    dispatch_rate_per_s: int
    log_retention_days: int
    # Data.
    protect_data: bool
    history_retention_days: int
    archive_glacier_after_days: int
    archive_expire_after_days: int
    # API.
    api_throttle_rate_rps: int
    api_throttle_burst: int
    authorizer_cache_s: int
    # Observability.
    tenants: tuple[str, ...]
    alarm_emails: tuple[str, ...]
    alarms: AlarmThresholds

    @property
    def stack_name(self) -> str:
        return f"cronwheel-{self.name}"

    @property
    def log_retention(self) -> logs.RetentionDays:
        return _RETENTION_BY_DAYS[self.log_retention_days]

    def resource_name(self, suffix: str) -> str:
        """A physical name unique per stage, e.g. `cronwheel-prod-tick`."""
        return f"{self.stack_name}-{suffix}"


def _check(settings: StageSettings) -> StageSettings:
    problems: list[str] = []
    if settings.shards < 1:
        problems.append("shards must be >= 1")
    if not 1 <= settings.lookahead_s <= 900:
        problems.append("lookahead_s must be within 1-900 (the SQS delay reach)")
    if not 0 < settings.shard_lease_s < 60:
        problems.append("shard_lease_s must be within 1-59 so a lease ends before the next tick")
    if not 128 <= settings.lambda_memory_mb <= 10240:
        problems.append("lambda_memory_mb must be within 128-10240")
    if not 2 <= settings.dispatch_max_concurrency <= 1000:
        problems.append("dispatch_max_concurrency must be within 2-1000 (SQS event source limit)")
    if not 1 <= settings.dispatch_rate_per_s <= 10_000:
        problems.append("dispatch_rate_per_s must be within 1-10000")
    if settings.log_retention_days not in _RETENTION_BY_DAYS:
        problems.append(
            f"log_retention_days must be one of {sorted(_RETENTION_BY_DAYS)} (CloudWatch Logs)"
        )
    if settings.history_retention_days < 1:
        problems.append("history_retention_days must be >= 1")
    if not 0 < settings.archive_glacier_after_days < settings.archive_expire_after_days:
        problems.append("archive_glacier_after_days must be > 0 and < archive_expire_after_days")
    if settings.authorizer_cache_s < 0 or settings.authorizer_cache_s > 3600:
        problems.append("authorizer_cache_s must be within 0-3600")
    for tenant in settings.tenants:
        if not tenant or not tenant.replace("-", "").replace("_", "").isalnum():
            problems.append(f"tenant {tenant!r} must be alphanumeric (with - or _)")
    if problems:
        raise StageConfigError(f"stage {settings.name!r}: " + "; ".join(problems))
    return settings


def _build_settings(name: str, raw: Mapping[str, Any]) -> StageSettings:
    fields = {f.name for f in dataclasses.fields(StageSettings)} - {"name"}
    unknown = sorted(set(raw) - fields)
    missing = sorted(fields - set(raw) - set(_OPTIONAL))
    if unknown or missing:
        raise StageConfigError(
            f"stage {name!r} in cdk.json: unknown keys {unknown}, missing keys {missing}"
        )
    alarm_fields = {f.name for f in dataclasses.fields(AlarmThresholds)}
    alarms_raw = raw["alarms"]
    if set(alarms_raw) != alarm_fields:
        raise StageConfigError(
            f"stage {name!r}: alarms must have exactly the keys {sorted(alarm_fields)}"
        )
    values = {**_OPTIONAL, **raw}
    values["tenants"] = tuple(raw["tenants"])
    values["alarm_emails"] = tuple(raw["alarm_emails"])
    values["alarms"] = AlarmThresholds(**{k: int(v) for k, v in alarms_raw.items()})
    return _check(StageSettings(name=name, **values))


def _merge(defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(defaults)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def stage_names(context: Mapping[str, Any]) -> tuple[str, ...]:
    stages = context.get(STAGES_KEY)
    if not isinstance(stages, Mapping) or not stages:
        raise StageConfigError(f"cdk.json context must define {STAGES_KEY!r}")
    return tuple(stages)


def load_stage(context: Mapping[str, Any], name: str) -> StageSettings:
    """The settings of stage `name` from the CDK context (defaults merged with overrides)."""
    stages = context.get(STAGES_KEY) or {}
    if name not in stages:
        raise StageConfigError(f"unknown stage {name!r}; cdk.json defines {sorted(stages)}")
    return _build_settings(name, _merge(context.get(DEFAULTS_KEY) or {}, stages[name]))
