"""Ticking: EventBridge drives the tick fan-out and the sweeper once a minute."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infra.template_helpers import function_named, ref_or_att, resources

pytestmark = pytest.mark.infra


def _rule_targets(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Function name suffix -> the rule that invokes it."""
    names = {
        logical_id: str(f["Properties"]["FunctionName"]).rsplit("-", 1)[-1]
        for logical_id, f in resources(template, "AWS::Lambda::Function").items()
    }
    targets = {}
    for rule in resources(template, "AWS::Events::Rule").values():
        for target in rule["Properties"]["Targets"]:
            targets[names[ref_or_att(target["Arn"])]] = {**rule["Properties"], "target": target}
    return targets


def test_tick_and_sweeper_run_every_minute(template: dict[str, Any]) -> None:
    # Given the scheduled rules
    targets = _rule_targets(template)
    # Then exactly the tick and the sweeper are invoked, each at rate(1 minute)
    assert set(targets) == {"tick", "sweeper"}
    for rule in targets.values():
        assert rule["ScheduleExpression"] == "rate(1 minute)"
        assert rule["State"] == "ENABLED"


def test_the_tick_is_invoked_without_a_shard_so_it_fans_out(template: dict[str, Any]) -> None:
    target = _rule_targets(template)["tick"]["target"]
    assert "shard" not in json.loads(target["Input"])
    # A late tick is not replayed: the next minute covers it.
    assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 60
    assert function_named(template, "tick")
