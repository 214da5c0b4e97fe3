"""Create the tables and queues from the same specs the CDK uses."""

from __future__ import annotations

import json
from typing import Any

from cronwheel.store.queues import ALL_QUEUES, QueueSpec
from cronwheel.store.tables import ALL_TABLES, TableSpec


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
