"""Secrets by reference: only the dispatcher may read them, and only under cronwheel/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.template_helpers import (
    as_list,
    function_named,
    policy_statements_of_role,
    ref_or_att,
)

pytestmark = pytest.mark.infra

FUNCTIONS = ("api", "authorizer", "tick", "dispatch", "sweeper")


def _secret_statements(template: dict[str, Any], key: str) -> list[dict[str, Any]]:
    role_id = ref_or_att(function_named(template, key)["Properties"]["Role"])
    return [
        statement
        for statement in policy_statements_of_role(template, role_id)
        if any(str(a).startswith("secretsmanager:") for a in as_list(statement["Action"]))
    ]


def _arn_text(resource: Any) -> str:
    """`{"Fn::Join": ["", [...]]}` read back with pseudo parameters as `<AWS::Name>`."""
    if isinstance(resource, str):
        return resource
    separator, parts = resource["Fn::Join"]
    return separator.join(p if isinstance(p, str) else f"<{p['Ref']}>" for p in parts)


def test_the_dispatcher_may_only_get_secret_values_under_the_cronwheel_prefix(
    template: dict[str, Any],
) -> None:
    # Given the dispatch function's permissions
    [statement] = _secret_statements(template, "dispatch")
    # Then it allows GetSecretValue alone, on secrets named cronwheel/* in its own account
    # and region, and nothing else of Secrets Manager
    assert statement["Effect"] == "Allow"
    assert as_list(statement["Action"]) == ["secretsmanager:GetSecretValue"]
    [resource] = as_list(statement["Resource"])
    assert _arn_text(resource) == (
        "arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:cronwheel/*"
    )


@pytest.mark.parametrize("key", [k for k in FUNCTIONS if k != "dispatch"])
def test_no_other_function_touches_secrets_manager(template: dict[str, Any], key: str) -> None:
    # Given a function that never calls a target / Then it has no Secrets Manager permission
    assert _secret_statements(template, key) == []
