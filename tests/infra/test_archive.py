"""Archive: TTL-expired executions reach S3 through a stream, a pipe and Firehose, no Lambda."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cronwheel.store.tables import EXECUTIONS
from infra.archive import TTL_REMOVE_PATTERN
from tests.infra.template_helpers import (
    as_list,
    function_named,
    policy_statements_of_role,
    ref_or_att,
    resources,
)

pytestmark = pytest.mark.infra


def _only(template: dict[str, Any], type_: str) -> tuple[str, dict[str, Any]]:
    found = resources(template, type_)
    assert len(found) == 1, f"expected one {type_}, found {len(found)}"
    return next(iter(found.items()))


def test_the_pipe_reads_only_ttl_removals_from_the_executions_stream(
    prod: dict[str, Any],
) -> None:
    # Given prod's executions table and the archive pipe
    env = function_named(prod, "api")["Properties"]["Environment"]["Variables"]
    executions_id = ref_or_att(env[EXECUTIONS.env_var])
    executions = prod["Resources"][executions_id]["Properties"]
    _, pipe = _only(prod, "AWS::Pipes::Pipe")
    source = pipe["Properties"]["SourceParameters"]

    # Then the table streams the deleted item, and the pipe reads that stream from the start,
    # passing on only REMOVE records made by the DynamoDB TTL service principal
    assert executions["StreamSpecification"]["StreamViewType"] in (
        "OLD_IMAGE",
        "NEW_AND_OLD_IMAGES",
    )
    assert pipe["Properties"]["Source"] == {"Fn::GetAtt": [executions_id, "StreamArn"]}
    assert source["DynamoDBStreamParameters"]["StartingPosition"] == "TRIM_HORIZON"
    patterns = [json.loads(f["Pattern"]) for f in source["FilterCriteria"]["Filters"]]
    assert patterns == [TTL_REMOVE_PATTERN]
    assert TTL_REMOVE_PATTERN["userIdentity"] == {
        "type": ["Service"],
        "principalId": ["dynamodb.amazonaws.com"],
    }
    # And what it cannot deliver lands in its own dead-letter queue
    dlq_id = ref_or_att(source["DynamoDBStreamParameters"]["DeadLetterConfig"]["Arn"])
    assert prod["Resources"][dlq_id]["Type"] == "AWS::SQS::Queue"


def test_the_pipe_delivers_to_an_encrypted_firehose_writing_gzip_json_lines_to_s3(
    prod: dict[str, Any],
) -> None:
    # Given the pipe and the delivery stream
    _, pipe = _only(prod, "AWS::Pipes::Pipe")
    stream_id, stream = _only(prod, "AWS::KinesisFirehose::DeliveryStream")
    destination = stream["Properties"]["ExtendedS3DestinationConfiguration"]

    # Then the pipe targets the stream, which is encrypted and writes one gzip JSON line per
    # expired execution, partitioned by day, into the archive bucket
    assert ref_or_att(pipe["Properties"]["Target"]) == stream_id
    assert stream["Properties"]["DeliveryStreamEncryptionConfigurationInput"]["KeyType"]
    assert destination["CompressionFormat"] == "GZIP"
    assert destination["Prefix"].startswith("executions/year=")
    assert [p["Type"] for p in destination["ProcessingConfiguration"]["Processors"]] == [
        "AppendDelimiterToRecord"
    ]
    bucket = prod["Resources"][ref_or_att(destination["BucketARN"])]
    assert bucket["Type"] == "AWS::S3::Bucket"


def test_the_pipe_role_may_read_the_stream_and_put_to_firehose_only(prod: dict[str, Any]) -> None:
    # Given the pipe's role
    _, pipe = _only(prod, "AWS::Pipes::Pipe")
    statements = policy_statements_of_role(prod, ref_or_att(pipe["Properties"]["RoleArn"]))
    # Then it has no wildcard action and no wildcard resource
    for statement in statements:
        assert all("*" not in action for action in as_list(statement["Action"]))
        assert "*" not in as_list(statement["Resource"])


def test_the_archive_bucket_moves_to_glacier_then_expires_and_is_locked_down(
    synthesized: Any,
) -> None:
    # Given prod's settings and its archive bucket
    settings = synthesized.settings("prod")
    prod = synthesized.templates["prod"]
    _, stream = _only(prod, "AWS::KinesisFirehose::DeliveryStream")
    bucket_id = ref_or_att(stream["Properties"]["ExtendedS3DestinationConfiguration"]["BucketARN"])
    bucket = prod["Resources"][bucket_id]["Properties"]

    # Then objects go to Glacier, then expire, as the stage says
    [rule] = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled"
    assert rule["Transitions"] == [
        {"StorageClass": "GLACIER", "TransitionInDays": settings.archive_glacier_after_days}
    ]
    assert rule["ExpirationInDays"] == settings.archive_expire_after_days
    # And the bucket is encrypted, private, access-logged and refuses plain HTTP
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert "DestinationBucketName" in bucket["LoggingConfiguration"]
    policies = [
        policy["Properties"]["PolicyDocument"]["Statement"]
        for policy in resources(prod, "AWS::S3::BucketPolicy").values()
        if ref_or_att(policy["Properties"]["Bucket"]) == bucket_id
    ]
    assert any(
        statement["Effect"] == "Deny"
        and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for statements in policies
        for statement in statements
    )
