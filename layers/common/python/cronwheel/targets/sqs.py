"""Delivering to an SQS target queue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from cronwheel import aws_clients

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class SqsSender:
    def __init__(self, region: str, endpoint_url: str | None) -> None:
        self._client: SQSClient = aws_clients.client("sqs", region, endpoint_url)

    def send(self, queue_url: str, body: str, attributes: dict[str, str]) -> str | None:
        """Returns None on success, or the error that makes this attempt fail."""
        try:
            self._client.send_message(
                QueueUrl=queue_url,
                MessageBody=body,
                MessageAttributes={
                    name: {"DataType": "String", "StringValue": value}
                    for name, value in attributes.items()
                },
            )
        except (ClientError, BotoCoreError) as error:
            return f"send to {queue_url} failed: {error}"
        return None
