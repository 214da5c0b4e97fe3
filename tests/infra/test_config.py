"""Stage settings: read from cdk.json, typed and frozen, refusing unknown or missing keys."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from infra.config import (
    DEFAULTS_KEY,
    STAGES_KEY,
    StageConfigError,
    StageSettings,
    load_stage,
    stage_names,
)
from infra.paths import CDK_JSON

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module")
def context() -> dict[str, Any]:
    return dict(json.loads(CDK_JSON.read_text())["context"])


def test_cdk_json_defines_dev_and_prod(context: dict[str, Any]) -> None:
    assert stage_names(context) == ("dev", "prod")


def test_dev_is_small_and_keeps_history_a_week(context: dict[str, Any]) -> None:
    dev = load_stage(context, "dev")
    assert (dev.shards, dev.allow_private_egress, dev.history_retention_days) == (4, False, 7)
    assert dev.protect_data is False
    assert dev.stack_name == "cronwheel-dev"


def test_prod_is_sharded_protected_and_has_dashboard_tenants(context: dict[str, Any]) -> None:
    prod = load_stage(context, "prod")
    assert (prod.shards, prod.history_retention_days, prod.protect_data) == (64, 30, True)
    assert prod.allow_private_egress is False
    assert prod.tenants == ("acme",)
    assert prod.alarms.fire_lag_p99_ms == 1000


def test_settings_are_frozen(context: dict[str, Any]) -> None:
    prod = load_stage(context, "prod")
    with pytest.raises(dataclasses.FrozenInstanceError):
        prod.shards = 1  # type: ignore[misc]
    assert isinstance(prod, StageSettings)


def test_an_unknown_key_is_refused(context: dict[str, Any]) -> None:
    # Given a typo in a stage's overrides
    broken = {**context, STAGES_KEY: {"dev": {"shard": 8}}}
    # Then loading the stage names the key instead of deploying the default
    with pytest.raises(StageConfigError, match="unknown keys \\['shard'\\]"):
        load_stage(broken, "dev")


def test_a_missing_key_is_refused(context: dict[str, Any]) -> None:
    defaults = dict(context[DEFAULTS_KEY])
    del defaults["lookahead_s"]
    with pytest.raises(StageConfigError, match="missing keys \\['lookahead_s'\\]"):
        load_stage({**context, DEFAULTS_KEY: defaults}, "dev")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"shards": 0}, "shards"),
        ({"lookahead_s": 901}, "lookahead_s"),
        ({"log_retention_days": 8}, "log_retention_days"),
        ({"archive_glacier_after_days": 400, "archive_expire_after_days": 365}, "glacier"),
        ({"tenants": ["a b"]}, "tenant"),
    ],
    ids=[
        "no_shards",
        "lookahead_beyond_sqs_delay",
        "odd_retention",
        "glacier_after_expiry",
        "bad_tenant",
    ],
)
def test_out_of_range_values_are_refused(
    context: dict[str, Any], override: dict[str, Any], message: str
) -> None:
    broken = {**context, STAGES_KEY: {"dev": override}}
    with pytest.raises(StageConfigError, match=message):
        load_stage(broken, "dev")


def test_an_unknown_stage_is_refused(context: dict[str, Any]) -> None:
    with pytest.raises(StageConfigError, match="unknown stage 'staging'"):
        load_stage(context, "staging")
