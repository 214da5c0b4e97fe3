"""Create the tables and queues from the same specs the CDK uses."""

from __future__ import annotations

import json
from typing import Any

from cronwheel.long_job_machine import long_job_definition_json
from cronwheel.store.queues import ALL_QUEUES, QueueSpec
from cronwheel.store.tables import ALL_TABLES, EXECUTIONS, TableSpec


def table_names(prefix: str) -> dict[str, str]:
    return {spec.logical_name: f"{prefix}-{spec.logical_name}" for spec in ALL_TABLES}


def _key_schema(hash_key: str, range_key: str | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": hash_key, "KeyType": "HASH"}]
    if range_key:
        schema.append({"AttributeName": range_key, "KeyType": "RANGE"})
    return schema


def create_table_request(spec: TableSpec, name: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": _key_schema(
            spec.hash_key.name, spec.range_key.name if spec.range_key else None
        ),
        "AttributeDefinitions": [
            {"AttributeName": n, "AttributeType": t}
            for n, t in spec.attribute_definitions().items()
        ],
    }
    if spec.indexes:
        request["GlobalSecondaryIndexes"] = [
            {
                "IndexName": index.name,
                "KeySchema": _key_schema(
                    index.hash_key.name, index.range_key.name if index.range_key else None
                ),
                "Projection": {"ProjectionType": "ALL"},
            }
            for index in spec.indexes
        ]
    return request


def create_tables(dynamodb: Any, names: dict[str, str]) -> None:
    for spec in ALL_TABLES:
        dynamodb.create_table(**create_table_request(spec, names[spec.logical_name]))
        if spec.ttl_attribute:
            dynamodb.update_time_to_live(
                TableName=names[spec.logical_name],
                TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
            )


def _create_queue(sqs: Any, spec: QueueSpec, prefix: str) -> str:
    dlq_url = sqs.create_queue(
        QueueName=f"{prefix}-{spec.logical_name}-dlq",
        Attributes={"MessageRetentionPeriod": str(spec.dlq_retention_s)},
    )["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(spec.max_receive_count)}
    url: str = sqs.create_queue(
        QueueName=f"{prefix}-{spec.logical_name}",
        Attributes={
            "VisibilityTimeout": str(spec.visibility_timeout_s),
            "RedrivePolicy": json.dumps(redrive),
        },
    )["QueueUrl"]
    return url


def create_queues(sqs: Any, prefix: str) -> dict[str, str]:
    return {spec.logical_name: _create_queue(sqs, spec, prefix) for spec in ALL_QUEUES}


def dead_events_topic_name(prefix: str) -> str:
    return f"{prefix}-dead-executions"


def create_dead_events_topic(sns: Any, prefix: str) -> str:
    """The stage's topic for dead-execution events (KMS-encrypted on AWS; moto ignores keys)."""
    arn: str = sns.create_topic(Name=dead_events_topic_name(prefix))["TopicArn"]
    return arn


def create_long_job_machine(
    sfn: Any, prefix: str, dispatch_queue_url: str, names: dict[str, str]
) -> str:
    """The long-job state machine, from the same definition the CDK deploys. moto's interpreter
    runs it; the role is a placeholder (moto does not check IAM)."""
    arn: str = sfn.create_state_machine(
        name=f"{prefix}-long-jobs",
        definition=long_job_definition_json(
            dispatch_queue_url=dispatch_queue_url,
            executions_table=names[EXECUTIONS.logical_name],
        ),
        roleArn="arn:aws:iam::123456789012:role/cronwheel-local-long-jobs",
        type="STANDARD",
    )["stateMachineArn"]
    return arn
