"""Failures end to end on the local stack: a poison job ends dead, is announced, and stays dead."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3

from cronwheel_local.stack import REGION, LocalStack
from tests.support.api import Api
from tests.support.target import RecordingTarget, wait_for


def _subscribe(stack: LocalStack, tenant: str) -> tuple[Any, str]:
    """An SQS queue subscribed to the stage's dead-execution events of one tenant."""
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=stack.endpoint_url)
    sns = boto3.client("sns", region_name=REGION, endpoint_url=stack.endpoint_url)
    url = sqs.create_queue(QueueName=f"{tenant}-dead-alerts-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(
        TopicArn=stack.dead_topic_arn,
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true", "FilterPolicy": json.dumps({"tenant": [tenant]})},
    )
    return sqs, url


def _events(sqs: Any, url: str) -> list[dict[str, Any]]:
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600)
    return [json.loads(m["Body"]) for m in got.get("Messages", [])]


def _execution(api: Api, execution_id: str) -> dict[str, Any]:
    status, execution = api.get(f"/v1/executions/{execution_id}")
    assert status == 200, execution
    result: dict[str, Any] = execution
    return result


def test_a_poison_job_is_dead_after_exactly_three_attempts_announced_and_left_alone(
    stack: LocalStack, api: Api, target: RecordingTarget
) -> None:
    # Given acme's alerting subscribed to its dead-execution events
    sqs, alerts = _subscribe(stack, "acme")
    # And a job whose target always fails, with max_attempts 3 and a 1 s backoff
    status, job = api.post(
        "/v1/jobs",
        {
            "target": {"type": "http", "url": f"{target.base_url}/fail"},
            "retry": {"max_attempts": 3, "backoff": "fixed", "initial_s": 1},
            "payload": {"report": "poison"},
        },
    )
    assert status == 201, job
    execution_id = job["execution_id"]

    # When it runs out of attempts
    wait_for(lambda: _execution(api, execution_id)["state"] == "dead", timeout_s=30)

    # Then it is dead after exactly three attempts, each a call with a newer fencing token
    execution = _execution(api, execution_id)
    assert execution["reason"].startswith("max_attempts_exhausted")
    assert [(a["attempt"], a["http_status"]) for a in execution["attempts"]] == [
        (1, 500),
        (2, 500),
        (3, 500),
    ]
    calls = target.calls_for(execution_id)
    assert [c.headers["X-Cronwheel-Fencing-Token"] for c in calls] == ["1", "2", "3"]

    # And its dead event reached acme, naming the job, the execution, the attempts and the reason
    [event] = wait_for(lambda: _events(sqs, alerts), timeout_s=10)
    assert {k: event[k] for k in ("type", "tenant", "job_id", "execution_id", "attempts")} == {
        "type": "execution.dead",
        "tenant": "acme",
        "job_id": job["id"],
        "execution_id": execution_id,
        "attempts": 3,
    }
    assert event["reason"] == execution["reason"]

    # And nothing retries it afterwards: once a job due well past its backoff and a few sweeps
    # has run, the poison job still has three attempts and the target saw three calls
    status, later = api.post(
        "/v1/jobs", {"delay_s": 5, "target": {"type": "http", "url": f"{target.base_url}/ok"}}
    )
    assert status == 201, later
    wait_for(lambda: _execution(api, later["execution_id"])["state"] == "succeeded", timeout_s=30)
    after = _execution(api, execution_id)
    assert (after["state"], len(after["attempts"])) == ("dead", 3)
    assert len(target.calls_for(execution_id)) == 3
    # And it was announced once
    assert _events(sqs, alerts) == []
