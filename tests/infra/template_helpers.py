"""Helpers for the infra tests: the CDK context, and reading a synthesized template (JSON)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.paths import CDK_JSON

SKIP_BUNDLING = {"aws:cdk:bundling-stacks": []}


def cdk_context(**overrides: Any) -> dict[str, Any]:
    context: dict[str, Any] = json.loads(Path(CDK_JSON).read_text())["context"]
    return {**context, **SKIP_BUNDLING, **overrides}


def resources(template: Mapping[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == type_
    }


def ref_or_att(value: Any) -> str | None:
    """The logical id behind `{"Ref": id}` or `{"Fn::GetAtt": [id, attr]}`."""
    if isinstance(value, Mapping):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def function_named(template: Mapping[str, Any], suffix: str) -> dict[str, Any]:
    matches = [
        resource
        for resource in resources(template, "AWS::Lambda::Function").values()
        if str(resource["Properties"]["FunctionName"]).endswith(f"-{suffix}")
    ]
    assert len(matches) == 1, f"expected one function named *-{suffix}"
    return matches[0]


def policy_statements_of_role(template: Mapping[str, Any], role_id: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        roles = [ref_or_att(role) for role in policy["Properties"].get("Roles", [])]
        if role_id in roles:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
