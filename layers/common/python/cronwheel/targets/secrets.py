"""Header values referenced as secrets, read from Secrets Manager when a target is called.

Values are cached per process for `max_age_s` (Powertools parameters), so a warm dispatcher
reads a secret about once a minute, and a rotated value is picked up within that time. A value
never leaves this module except as the header of the outgoing call: errors name the secret and
the reason, never the value.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.parameters import SecretsProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import BotoCoreError, ClientError

from cronwheel import aws_clients
from cronwheel.domain.model import HeaderValue, SecretRef

DEFAULT_MAX_AGE_S = 60


class SecretUnavailable(Exception):
    """A referenced secret could not be turned into a header value; the attempt fails."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"secret {name} could not be read ({reason})")


def _usable_as_header(value: str) -> bool:
    # http.client refuses CR/LF (header injection) and sends latin-1; its errors quote the
    # value, so an unusable value is refused here, where the message can leave it out.
    return all(ch == "\t" or (" " <= ch <= "~") or ("\xa0" <= ch <= "\xff") for ch in value)


class SecretResolver:
    """Turns target headers into plain values, reading `SecretRef`s from Secrets Manager."""

    def __init__(
        self,
        region: str,
        endpoint_url: str | None,
        *,
        max_age_s: int = DEFAULT_MAX_AGE_S,
        provider: SecretsProvider | None = None,
    ) -> None:
        self._region = region
        self._endpoint_url = endpoint_url
        self._max_age_s = max_age_s
        self._provider = provider
        self._lock = threading.Lock()

    def resolve_headers(self, headers: Mapping[str, HeaderValue]) -> dict[str, str]:
        """Plain headers as they are, secret ones read; raises SecretUnavailable."""
        return {
            name: value if isinstance(value, str) else self.value_of(value)
            for name, value in headers.items()
        }

    def value_of(self, ref: SecretRef) -> str:
        try:
            value: Any = self._secrets().get(ref.name, max_age=self._max_age_s)
        except GetParameterError as error:
            raise SecretUnavailable(ref.name, _reason(error)) from None
        if not isinstance(value, str):
            raise SecretUnavailable(ref.name, "it is binary; a header needs a SecretString")
        if not _usable_as_header(value):
            raise SecretUnavailable(ref.name, "its value is not a valid header value")
        return value

    def _secrets(self) -> SecretsProvider:
        # Built on first use: the API, tick and sweeper never read secrets.
        with self._lock:
            if self._provider is None:
                client = aws_clients.client("secretsmanager", self._region, self._endpoint_url)
                self._provider = SecretsProvider(boto3_client=client)
            return self._provider


def _reason(error: GetParameterError) -> str:
    """The AWS error code (not found, access denied), which never carries the value."""
    cause = error.__cause__ or error.__context__
    if isinstance(cause, ClientError):
        return str(cause.response.get("Error", {}).get("Code") or "request failed")
    if isinstance(cause, BotoCoreError):
        return type(cause).__name__
    return "request failed"
