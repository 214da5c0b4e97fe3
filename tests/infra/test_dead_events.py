"""Dead-execution events: one encrypted topic per stage, published to by the functions that can
end an execution `dead`, and known to every function through the environment."""

from __future__ import annotations

from typing import Any

import pytest

from cronwheel.settings import DEAD_TOPIC_ENV
from tests.infra.template_helpers import (
    as_list,
    function_named,
    policy_statements_of_role,
    ref_or_att,
    resources,
)

pytestmark = pytest.mark.infra

PUBLISHERS = {"dispatch", "sweeper", "api"}  # dispatch and sweeper end attempts; the API, :complete
OTHERS = {"tick", "authorizer"}


def _dead_topic(template: dict[str, Any], stage: str) -> tuple[str, dict[str, Any]]:
    [(topic_id, topic)] = [
        (topic_id, topic)
        for topic_id, topic in resources(template, "AWS::SNS::Topic").items()
        if topic["Properties"].get("TopicName") == f"cronwheel-{stage}-dead-executions"
    ]
    return topic_id, topic


def _role_of(template: dict[str, Any], key: str) -> str:
    role = ref_or_att(function_named(template, key)["Properties"]["Role"])
    assert role is not None
    return role


def _grants(template: dict[str, Any], key: str, action: str) -> set[str | None]:
    """The resources (logical ids) a function's role may apply `action` to."""
    return {
        ref_or_att(resource)
        for statement in policy_statements_of_role(template, _role_of(template, key))
        if statement["Effect"] == "Allow" and action in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    }


def test_the_topic_is_encrypted_with_a_rotating_key_and_refuses_plain_http(
    template: dict[str, Any], stage: str
) -> None:
    # Given the stage's dead-executions topic
    topic_id, topic = _dead_topic(template, stage)
    # Then it is encrypted with its own customer key, which rotates
    key = template["Resources"][ref_or_att(topic["Properties"]["KmsMasterKeyId"])]
    assert key["Type"] == "AWS::KMS::Key"
    assert key["Properties"]["EnableKeyRotation"] is True
    # And its policy denies requests without TLS
    policies = [
        p
        for p in resources(template, "AWS::SNS::TopicPolicy").values()
        if topic_id in {ref_or_att(t) for t in p["Properties"]["Topics"]}
    ]
    statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )


def test_every_function_is_told_the_topic(template: dict[str, Any], stage: str) -> None:
    topic_id, _ = _dead_topic(template, stage)
    for key in PUBLISHERS | OTHERS:
        env = function_named(template, key)["Properties"]["Environment"]["Variables"]
        assert ref_or_att(env[DEAD_TOPIC_ENV]) == topic_id, key


def test_only_the_functions_that_end_executions_may_publish(
    template: dict[str, Any], stage: str
) -> None:
    # Given the topic and its key
    topic_id, topic = _dead_topic(template, stage)
    key_id = ref_or_att(topic["Properties"]["KmsMasterKeyId"])
    # Then dispatch, sweeper and API may publish, and use the key to encrypt (no wildcard action)
    for key in PUBLISHERS:
        assert _grants(template, key, "sns:Publish") == {topic_id}, key
        assert key_id in _grants(template, key, "kms:GenerateDataKey"), key
        assert key_id in _grants(template, key, "kms:Decrypt"), key
    # And the tick and the authorizer may not
    for key in OTHERS:
        assert _grants(template, key, "sns:Publish") == set(), key


def test_the_topic_arn_is_a_stack_output(template: dict[str, Any], stage: str) -> None:
    topic_id, _ = _dead_topic(template, stage)
    assert ref_or_att(template["Outputs"]["DeadExecutionsTopicArn"]["Value"]) == topic_id
