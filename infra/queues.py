"""Queues: the SQS queues of `cronwheel.store.queues`, each with its own dead-letter queue, and
the topic that announces executions that end `dead`."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cronwheel.store.queues import ALL_QUEUES, DISPATCH, QueueSpec
from infra.config import StageSettings
from infra.topics import encrypted_topic

# SQS keeps a message at most 14 days; a dead letter must outlive its investigation.
_DLQ_RETENTION_MAX_S = 14 * 24 * 3600


def build_dead_letter_queue(scope: Construct, construct_id: str) -> sqs.Queue:
    """An encrypted, TLS-only queue that receives what another service gave up on."""
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.seconds(_DLQ_RETENTION_MAX_S),
    )


class Queues(Construct):
    """The dispatch queue (delayed executions ride its `DelaySeconds`) and its DLQ.

    SSE-SQS rather than a customer key: the queue holds execution ids only, never payloads or
    secrets, and a CMK would add `kms:GenerateDataKey*` wildcards to every producer's role."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self.queues: dict[str, sqs.Queue] = {}
        self.dead_letter_queues: dict[str, sqs.Queue] = {}
        for spec in ALL_QUEUES:
            self.queues[spec.logical_name], self.dead_letter_queues[spec.logical_name] = (
                self._build_queue(spec)
            )
        # One message per execution that ends `dead`, with the message attribute `tenant`:
        # each tenant's alerting subscribes with the filter policy {"tenant": ["<id>"]}.
        self.dead_executions, self.dead_executions_key = encrypted_topic(
            self,
            "DeadExecutionsTopic",
            settings,
            name="dead-executions",
            purpose="dead executions",
        )

    @property
    def dispatch(self) -> sqs.Queue:
        return self.queues[DISPATCH.logical_name]

    @property
    def dispatch_dlq(self) -> sqs.Queue:
        return self.dead_letter_queues[DISPATCH.logical_name]

    def grant_publish_dead_executions(self, role: iam.IRole) -> None:
        """Publish to the dead-executions topic: `sns:Publish` on it and the two key actions
        SNS needs to encrypt the message with its key, by name (no action wildcards)."""
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sns:Publish"], resources=[self.dead_executions.topic_arn])
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[self.dead_executions_key.key_arn],
            )
        )

    def _build_queue(self, spec: QueueSpec) -> tuple[sqs.Queue, sqs.Queue]:
        name = spec.logical_name.capitalize()
        dlq = sqs.Queue(
            self,
            f"{name}DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.seconds(min(spec.dlq_retention_s, _DLQ_RETENTION_MAX_S)),
        )
        queue = sqs.Queue(
            self,
            f"{name}Queue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(spec.visibility_timeout_s),
            retention_period=Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=dlq, max_receive_count=spec.max_receive_count
            ),
        )
        return queue, dlq
