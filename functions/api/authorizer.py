"""REQUEST Lambda authorizer: the bearer API key becomes tenant, role and key id."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cronwheel.errors import Unauthenticated
from cronwheel.runtime import runtime
from cronwheel.services.auth import authenticate

logger = Logger(service="cronwheel-authorizer")


def _header(event: dict[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if key.lower() == name:
            return str(value)
    return None


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        principal = authenticate(runtime().store, _header(event, "authorization"))
    except Unauthenticated:
        # API Gateway answers 401 for exactly this message.
        raise PermissionError("Unauthorized") from None
    arn = str(event.get("methodArn", "*"))
    # Allow every method of this API for the key, so the policy can be cached per key.
    resource = arn.split("/", 1)[0] + "/*" if "/" in arn else arn
    return {
        "principalId": principal.key_id,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": resource}
            ],
        },
        "context": {
            "tenant": principal.tenant,
            "role": principal.role.value,
            "key_id": principal.key_id,
        },
    }
