"""History archive: executions expired by TTL are copied to S3 before they are gone for good.

    executions table --stream (OLD_IMAGE)--> EventBridge Pipe --> Firehose --> S3 (gzip JSON lines)
                        filter: eventName REMOVE by the DynamoDB TTL service principal

No Lambda code: the pipe filters (user deletes and updates never reach Firehose), Firehose buffers,
compresses and partitions by day, and S3 lifecycle moves objects to Glacier and expires them.
"""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesisfirehose as firehose
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import StageSettings
from infra.nag import acknowledge
from infra.queues import build_dead_letter_queue

# A TTL deletion is a REMOVE record whose userIdentity is the DynamoDB service itself.
TTL_REMOVE_PATTERN = {
    "eventName": ["REMOVE"],
    "userIdentity": {
        "type": ["Service"],
        "principalId": ["dynamodb.amazonaws.com"],
    },
}

_DAY_PREFIX = "year=!{timestamp:yyyy}/month=!{timestamp:MM}/day=!{timestamp:dd}/"


class HistoryArchive(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        executions: dynamodb.Table,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._removal = RemovalPolicy.RETAIN if settings.protect_data else RemovalPolicy.DESTROY
        self.access_logs_bucket = self._build_access_logs_bucket()
        self.bucket = self._build_archive_bucket()
        self.delivery_stream = self._build_delivery_stream()
        self.dead_letter_queue: sqs.Queue = build_dead_letter_queue(self, "PipeDeadLetterQueue")
        acknowledge(
            self.dead_letter_queue,
            "AwsSolutions-SQS3",
            "This queue is the dead-letter queue of the archive pipe (records it could not "
            "deliver); its depth is alarmed on, so it needs no dead-letter queue of its own.",
        )
        self.pipe = self._build_pipe(executions)

    def _build_access_logs_bucket(self) -> s3.Bucket:
        bucket = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire", expiration=Duration.days(90))],
            # Buckets are kept even in dev: S3 refuses to delete a bucket with objects in it.
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            bucket,
            "AwsSolutions-S1",
            "This bucket receives the archive bucket's server access logs; logging it too "
            "would need another bucket with the same question.",
        )
        return bucket

    def _build_archive_bucket(self) -> s3.Bucket:
        settings = self._settings
        return s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs_bucket,
            server_access_logs_prefix="archive/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="glacier-then-expire",
                    transitions=[
                        s3.Transition(
                            storage_class=s3.StorageClass.GLACIER,
                            transition_after=Duration.days(settings.archive_glacier_after_days),
                        )
                    ],
                    expiration=Duration.days(settings.archive_expire_after_days),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _build_delivery_stream(self) -> firehose.CfnDeliveryStream:
        # The L1 resource, because the L2 grants its role read-write (delete included) on the
        # bucket; Firehose needs exactly the permissions below (Firehose developer guide,
        # "Grant Firehose access to an Amazon S3 destination").
        errors = logs.LogGroup(
            self,
            "DeliveryErrors",
            retention=self._settings.log_retention,
            removal_policy=self._removal,
        )
        error_stream = errors.add_stream("S3Delivery")
        role = iam.Role(
            self,
            "DeliveryRole",
            assumed_by=iam.ServicePrincipal("firehose.amazonaws.com"),
            description="Archive delivery stream: write objects into the archive bucket",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[
                    "s3:AbortMultipartUpload",
                    "s3:GetBucketLocation",
                    "s3:GetObject",
                    "s3:ListBucket",
                    "s3:ListBucketMultipartUploads",
                    "s3:PutObject",
                ],
                resources=[self.bucket.bucket_arn, self.bucket.arn_for_objects("*")],
            )
        )
        errors.grant_write(role)
        cfn_bucket = self.bucket.node.default_child
        assert isinstance(cfn_bucket, s3.CfnBucket)
        bucket_id = Stack.of(self).get_logical_id(cfn_bucket)
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]",
            "Firehose writes objects under keys it chooses (date partitions) in this one "
            "bucket; object-level permissions need the bucket's object wildcard.",
        )
        D = firehose.CfnDeliveryStream
        encryption = D.DeliveryStreamEncryptionConfigurationInputProperty(key_type="AWS_OWNED_CMK")
        stream = D(
            self,
            "Delivery",
            delivery_stream_name=self._settings.resource_name("history-archive"),
            delivery_stream_type="DirectPut",
            delivery_stream_encryption_configuration_input=encryption,
            extended_s3_destination_configuration=D.ExtendedS3DestinationConfigurationProperty(
                bucket_arn=self.bucket.bucket_arn,
                role_arn=role.role_arn,
                prefix=f"executions/{_DAY_PREFIX}",
                error_output_prefix=f"errors/!{{firehose:error-output-type}}/{_DAY_PREFIX}",
                compression_format="GZIP",
                buffering_hints=D.BufferingHintsProperty(interval_in_seconds=300, size_in_m_bs=64),
                # One JSON document per line, so Athena and `zcat | jq` read the objects.
                processing_configuration=D.ProcessingConfigurationProperty(
                    enabled=True,
                    processors=[D.ProcessorProperty(type="AppendDelimiterToRecord")],
                ),
                cloud_watch_logging_options=D.CloudWatchLoggingOptionsProperty(
                    enabled=True,
                    log_group_name=errors.log_group_name,
                    log_stream_name=error_stream.log_stream_name,
                ),
            ),
        )
        # Firehose checks its access to the bucket when the stream is created.
        stream.node.add_dependency(role.node.find_child("DefaultPolicy"))
        return stream

    def _build_pipe(self, executions: dynamodb.Table) -> pipes.CfnPipe:
        stream_arn = executions.table_stream_arn
        assert stream_arn is not None, "the executions table must have a stream"
        role = iam.Role(
            self,
            "PipeRole",
            assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"),
            description="Archive pipe: read the executions stream, put into the delivery stream",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[
                    "dynamodb:DescribeStream",
                    "dynamodb:GetRecords",
                    "dynamodb:GetShardIterator",
                    "dynamodb:ListStreams",
                ],
                resources=[stream_arn],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["firehose:PutRecord", "firehose:PutRecordBatch"],
                resources=[self.delivery_stream.attr_arn],
            )
        )
        self.dead_letter_queue.grant_send_messages(role)
        pipe_logs = logs.LogGroup(
            self,
            "PipeLogs",
            retention=self._settings.log_retention,
            removal_policy=self._removal,
        )
        pipe_logs.grant_write(role)
        P = pipes.CfnPipe
        pipe = P(
            self,
            "Pipe",
            name=self._settings.resource_name("history-archive"),
            description="Expired (TTL) executions -> Firehose -> S3",
            role_arn=role.role_arn,
            source=stream_arn,
            source_parameters=P.PipeSourceParametersProperty(
                filter_criteria=P.FilterCriteriaProperty(
                    filters=[P.FilterProperty(pattern=json.dumps(TTL_REMOVE_PATTERN))]
                ),
                dynamo_db_stream_parameters=P.PipeSourceDynamoDBStreamParametersProperty(
                    starting_position="TRIM_HORIZON",
                    batch_size=100,
                    maximum_batching_window_in_seconds=30,
                    maximum_retry_attempts=10,
                    dead_letter_config=P.DeadLetterConfigProperty(
                        arn=self.dead_letter_queue.queue_arn
                    ),
                ),
            ),
            target=self.delivery_stream.attr_arn,
            log_configuration=P.PipeLogConfigurationProperty(
                level="ERROR",
                cloudwatch_logs_log_destination=P.CloudwatchLogsLogDestinationProperty(
                    log_group_arn=pipe_logs.log_group_arn
                ),
            ),
        )
        # The role's policy must exist before the pipe starts reading.
        pipe.node.add_dependency(role.node.find_child("DefaultPolicy"))
        return pipe
