"""Queues: every queue has a dead-letter queue (or is one), is encrypted and TLS-only."""

from __future__ import annotations

from typing import Any

import pytest

from cronwheel.store.queues import DISPATCH
from tests.infra.template_helpers import function_named, ref_or_att, resources

pytestmark = pytest.mark.infra


def _dead_letter_targets(template: dict[str, Any]) -> set[str]:
    """Queues some other resource sends its failures to."""
    targets: set[str] = set()
    for queue in resources(template, "AWS::SQS::Queue").values():
        redrive = queue["Properties"].get("RedrivePolicy")
        if redrive:
            targets.add(ref_or_att(redrive["deadLetterTargetArn"]) or "")
    for pipe in resources(template, "AWS::Pipes::Pipe").values():
        for parameters in pipe["Properties"]["SourceParameters"].values():
            if isinstance(parameters, dict) and "DeadLetterConfig" in parameters:
                targets.add(ref_or_att(parameters["DeadLetterConfig"]["Arn"]) or "")
    return targets


def test_every_queue_has_a_dead_letter_queue_or_is_one(prod: dict[str, Any]) -> None:
    # Given every queue of prod
    queues = resources(prod, "AWS::SQS::Queue")
    dead_letter_queues = _dead_letter_targets(prod)
    # Then each one either redrives to a DLQ or is the DLQ of something
    for logical_id, queue in queues.items():
        assert "RedrivePolicy" in queue["Properties"] or logical_id in dead_letter_queues, (
            f"{logical_id} has no dead-letter queue"
        )


def test_every_queue_is_encrypted_and_refuses_plain_http(template: dict[str, Any]) -> None:
    # Given every queue and every queue policy
    queues = resources(template, "AWS::SQS::Queue")
    denied_without_tls: set[str] = set()
    for policy in resources(template, "AWS::SQS::QueuePolicy").values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        if any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in statements
        ):
            denied_without_tls |= {ref_or_att(q) for q in policy["Properties"]["Queues"]}
    # Then each queue has server-side encryption and a policy denying non-TLS requests
    for logical_id, queue in queues.items():
        properties = queue["Properties"]
        assert properties.get("SqsManagedSseEnabled") or properties.get("KmsMasterKeyId")
        assert logical_id in denied_without_tls


def test_dispatch_queue_follows_its_spec(template: dict[str, Any]) -> None:
    # Given the queue the functions are told to use for dispatch
    env = function_named(template, "dispatch")["Properties"]["Environment"]["Variables"]
    queue = template["Resources"][ref_or_att(env[DISPATCH.env_var])]["Properties"]
    # Then visibility and redrive are the spec's
    assert queue["VisibilityTimeout"] == DISPATCH.visibility_timeout_s
    assert queue["RedrivePolicy"]["maxReceiveCount"] == DISPATCH.max_receive_count
    # And the visibility outlasts the dispatcher's longest invocation
    dispatch = function_named(template, "dispatch")["Properties"]
    assert queue["VisibilityTimeout"] >= dispatch["Timeout"]
