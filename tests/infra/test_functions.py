"""Functions: one factory, so every function has the same runtime, architecture and telemetry."""

from __future__ import annotations

from typing import Any

import pytest

from cronwheel.store.tables import ALL_TABLES
from infra.functions import ALL_FUNCTIONS
from tests.infra.template_helpers import (
    as_list,
    function_named,
    policy_statements_of_role,
    ref_or_att,
    resources,
)

pytestmark = pytest.mark.infra

HANDLERS = {
    "api": "api.handler.handler",
    "authorizer": "api.authorizer.handler",
    "tick": "tick.handler.handler",
    "dispatch": "dispatch.handler.handler",
    "sweeper": "sweeper.handler.handler",
}


def test_the_functions_are_the_five_handlers(template: dict[str, Any]) -> None:
    # Given the stage / When its functions are listed
    handlers = sorted(
        f["Properties"]["Handler"] for f in resources(template, "AWS::Lambda::Function").values()
    )
    # Then they are exactly the five handlers of the layout
    assert handlers == sorted(HANDLERS.values())
    assert {spec.key: spec.handler for spec in ALL_FUNCTIONS} == HANDLERS


@pytest.mark.parametrize("key", HANDLERS)
def test_every_function_is_arm64_python312_traced_with_json_logs(
    template: dict[str, Any], key: str
) -> None:
    # Given one function
    properties = function_named(template, key)["Properties"]
    # Then it runs Python 3.12 on ARM64 with active X-Ray tracing and JSON logs to its own
    # log group, which has a retention
    assert properties["Runtime"] == "python3.12"
    assert properties["Architectures"] == ["arm64"]
    assert properties["TracingConfig"] == {"Mode": "Active"}
    assert properties["LoggingConfig"]["LogFormat"] == "JSON"
    log_group = template["Resources"][ref_or_att(properties["LoggingConfig"]["LogGroup"])]
    assert log_group["Properties"]["RetentionInDays"] > 0
    # And it has both layers: the dependencies and the shared cronwheel package
    layer_ids = {ref_or_att(layer) for layer in properties["Layers"]}
    assert layer_ids == set(resources(template, "AWS::Lambda::LayerVersion"))


def test_every_function_has_its_own_role(template: dict[str, Any]) -> None:
    # Given every function / When their roles are collected
    roles = [
        ref_or_att(f["Properties"]["Role"])
        for f in resources(template, "AWS::Lambda::Function").values()
    ]
    # Then no two functions share a role, and no role carries a managed policy
    assert len(set(roles)) == len(roles) == len(HANDLERS)
    for role_id in roles:
        assert "ManagedPolicyArns" not in template["Resources"][role_id]["Properties"]


def test_every_function_gets_the_settings_environment(synthesized: Any, stage: str) -> None:
    # Given the stage's settings and its functions
    settings = synthesized.settings(stage)
    template = synthesized.templates[stage]
    for key in HANDLERS:
        env = function_named(template, key)["Properties"]["Environment"]["Variables"]
        # Then each one knows every table, the dispatch queue and the stage's firing settings
        assert {spec.env_var for spec in ALL_TABLES} <= set(env)
        assert env["CRONWHEEL_STAGE"] == stage
        assert env["CRONWHEEL_SHARDS"] == str(settings.shards)
        assert env["CRONWHEEL_LOOKAHEAD_S"] == str(settings.lookahead_s)
        assert env["CRONWHEEL_ALLOW_PRIVATE_EGRESS"] == (
            "true" if settings.allow_private_egress else "false"
        )
        assert env["CRONWHEEL_SHARD_LEASE_S"] == str(settings.shard_lease_s)
        assert env["CRONWHEEL_DISPATCH_RATE_PER_S"] == str(settings.dispatch_rate_per_s)


def _allowed(template: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    role_id = ref_or_att(function_named(template, key)["Properties"]["Role"])
    return [
        (action, resource)
        for statement in policy_statements_of_role(template, role_id)
        if statement["Effect"] == "Allow"
        for action in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    ]


def test_the_authorizer_can_only_read_keys_and_tenants(prod: dict[str, Any]) -> None:
    # Given the authorizer's permissions
    allowed = _allowed(prod, "authorizer")
    dynamodb = [(a, r) for a, r in allowed if a.startswith("dynamodb:")]
    # Then it never writes, and reads only the api_keys and tenants tables
    assert dynamodb
    assert not any(
        a.endswith(("PutItem", "UpdateItem", "DeleteItem", "WriteItem")) for a, _ in dynamodb
    )
    env = function_named(prod, "authorizer")["Properties"]["Environment"]["Variables"]
    readable = {ref_or_att(r) for _, r in dynamodb if ref_or_att(r)}
    assert readable == {
        ref_or_att(env["CRONWHEEL_TABLE_API_KEYS"]),
        ref_or_att(env["CRONWHEEL_TABLE_TENANTS"]),
    }
    assert not any(a.startswith(("sqs:", "lambda:", "secretsmanager:")) for a, _ in allowed)


def test_the_tick_may_invoke_itself_by_name(prod: dict[str, Any]) -> None:
    # Given the tick function and its permissions
    tick = function_named(prod, "tick")["Properties"]
    invokes = [r for a, r in _allowed(prod, "tick") if a == "lambda:InvokeFunction"]
    # Then it may invoke exactly the function named like itself (built, not referenced, so
    # the role does not depend on the function)
    assert len(invokes) == 1
    joined = "".join(p if isinstance(p, str) else "" for p in invokes[0]["Fn::Join"][1])
    assert joined.endswith(f":function:{tick['FunctionName']}")


def test_only_the_dispatcher_reads_target_secrets(prod: dict[str, Any]) -> None:
    for key in HANDLERS:
        reads = [a for a, _ in _allowed(prod, key) if a.startswith("secretsmanager:")]
        assert bool(reads) == (key == "dispatch"), key


def test_dispatch_consumes_the_queue_in_batches_with_partial_failures(
    synthesized: Any,
) -> None:
    # Given prod's event source mapping
    prod = synthesized.templates["prod"]
    [mapping] = resources(prod, "AWS::Lambda::EventSourceMapping").values()
    properties = mapping["Properties"]
    dispatch_env = function_named(prod, "dispatch")["Properties"]["Environment"]["Variables"]
    # Then the dispatcher reads the dispatch queue 10 at a time, reports failed items only,
    # and its concurrency is capped by the stage setting
    assert ref_or_att(properties["EventSourceArn"]) == ref_or_att(
        dispatch_env["CRONWHEEL_QUEUE_DISPATCH_URL"]
    )
    assert properties["BatchSize"] == 10
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert properties["ScalingConfig"] == {
        "MaximumConcurrency": synthesized.settings("prod").dispatch_max_concurrency
    }
