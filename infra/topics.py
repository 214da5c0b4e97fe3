"""SNS topics encrypted with their own rotating key, TLS only."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.config import StageSettings


def encrypted_topic(
    scope: Construct, construct_id: str, settings: StageSettings, *, name: str, purpose: str
) -> tuple[sns.Topic, kms.Key]:
    """A topic `cronwheel-<stage>-<name>` and its key (construct ids `<id>` and `<id>Key`);
    the key is kept when the stage protects its data."""
    key = kms.Key(
        scope,
        f"{construct_id}Key",
        description=f"{settings.stack_name}: encrypts the {name} topic",
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN if settings.protect_data else RemovalPolicy.DESTROY,
    )
    topic = sns.Topic(
        scope,
        construct_id,
        topic_name=settings.resource_name(name),
        display_name=f"cronwheel {settings.name} {purpose}",
        master_key=key,
        enforce_ssl=True,
    )
    return topic, key
