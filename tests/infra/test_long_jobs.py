"""Long jobs: the state machine deploys the layer's definition, logged and traced, with a role
that may do only what the definition does; the dispatcher and the API may drive it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cronwheel.long_job_machine import long_job_definition
from cronwheel.settings import LONG_JOB_MACHINE_ENV
from cronwheel.store.queues import DISPATCH
from cronwheel.store.tables import EXECUTIONS
from tests.infra.template_helpers import (
    as_list,
    function_named,
    policy_statements_of_role,
    ref_or_att,
    resources,
)

pytestmark = pytest.mark.infra

_TASK_RESPONSES = {"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"}


def _machine(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    machines = resources(template, "AWS::StepFunctions::StateMachine")
    assert len(machines) == 1
    logical_id, machine = next(iter(machines.items()))
    return logical_id, machine["Properties"]


def _rendered(value: Any) -> str:
    """A `DefinitionString` with every reference shown as `<<logical id>>`."""
    if isinstance(value, str):
        return value
    separator, parts = value["Fn::Join"]
    return str(separator).join(
        part if isinstance(part, str) else f"<<{ref_or_att(part)}>>" for part in parts
    )


def _env(template: dict[str, Any], function: str) -> dict[str, Any]:
    variables: dict[str, Any] = function_named(template, function)["Properties"]["Environment"][
        "Variables"
    ]
    return variables


def _actions_on(statements: list[dict[str, Any]], resource_id: str) -> set[str]:
    return {
        action
        for s in statements
        if s["Effect"] == "Allow"
        and any(
            ref_or_att(r) == resource_id or resource_id in json.dumps(r)
            for r in as_list(s["Resource"])
        )
        for action in as_list(s["Action"])
    }


def test_template_holds_the_layers_definition(template: dict[str, Any]) -> None:
    # Given the state machine and the queue and table the functions are told to use
    _, machine = _machine(template)
    env = _env(template, "dispatch")
    queue_id, table_id = ref_or_att(env[DISPATCH.env_var]), ref_or_att(env[EXECUTIONS.env_var])
    # Then its definition is exactly what the layer builds (the local stack runs the same)
    expected = long_job_definition(
        dispatch_queue_url=f"<<{queue_id}>>", executions_table=f"<<{table_id}>>"
    )
    assert json.loads(_rendered(machine["DefinitionString"])) == expected


def test_machine_is_standard_logged_and_traced(template: dict[str, Any]) -> None:
    _, machine = _machine(template)
    assert machine.get("StateMachineType", "STANDARD") == "STANDARD"
    assert machine["TracingConfiguration"] == {"Enabled": True}
    logging = machine["LoggingConfiguration"]
    assert logging["Level"] == "ALL"
    log_group = ref_or_att(logging["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"])
    assert template["Resources"][log_group]["Type"] == "AWS::Logs::LogGroup"


def test_machine_role_may_send_to_dispatch_and_update_executions_only(
    template: dict[str, Any],
) -> None:
    # Given the machine's role
    _, machine = _machine(template)
    statements = policy_statements_of_role(template, ref_or_att(machine["RoleArn"]) or "")
    env = _env(template, "dispatch")
    queue_id, table_id = ref_or_att(env[DISPATCH.env_var]), ref_or_att(env[EXECUTIONS.env_var])
    # Then it may send to the dispatch queue and update the executions table
    assert "sqs:SendMessage" in _actions_on(statements, queue_id or "")
    assert _actions_on(statements, table_id or "") == {"dynamodb:UpdateItem"}
    # And touches no other data: beyond those two, only log delivery and tracing
    for statement in statements:
        for action in as_list(statement["Action"]):
            assert action.split(":")[0] in {"sqs", "dynamodb", "logs", "xray"}, action
            if action.startswith("dynamodb:"):
                assert action == "dynamodb:UpdateItem"


@pytest.mark.parametrize("function", ["dispatch", "api"])
def test_dispatcher_and_api_may_drive_the_machine(template: dict[str, Any], function: str) -> None:
    machine_id, _ = _machine(template)
    # Given the function's role and environment
    role_id = ref_or_att(function_named(template, function)["Properties"]["Role"]) or ""
    actions = _actions_on(policy_statements_of_role(template, role_id), machine_id)
    # Then it may start the machine and answer its tasks, and knows which machine
    assert {"states:StartExecution", *_TASK_RESPONSES} <= actions
    assert ref_or_att(_env(template, function)[LONG_JOB_MACHINE_ENV]) == machine_id


@pytest.mark.parametrize("function", ["tick", "sweeper", "authorizer"])
def test_other_functions_may_not_drive_the_machine(template: dict[str, Any], function: str) -> None:
    role_id = ref_or_att(function_named(template, function)["Properties"]["Role"]) or ""
    actions = {
        action
        for statement in policy_statements_of_role(template, role_id)
        for action in as_list(statement["Action"])
    }
    assert not {a for a in actions if a.startswith("states:")}
