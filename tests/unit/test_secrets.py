"""Secrets by reference: request conversion, tenancy, storage, presentation and resolution."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from botocore.exceptions import ClientError
from pydantic import ValidationError

from cronwheel.domain.model import (
    HttpTarget,
    Job,
    Priority,
    RetryPolicy,
    SecretRef,
    SqsTarget,
    check_secret_refs,
)
from cronwheel.errors import InvalidArgument
from cronwheel.store.codec import job_from_item, job_to_item, target_from_doc, target_to_doc
from cronwheel.targets.secrets import SecretResolver, SecretUnavailable
from functions.api.convert import domain_target
from functions.api.presenters import job_out
from functions.api.schemas import HttpTargetIn

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TOKEN_NAME = "cronwheel/acme/billing-token"


def _target_in(headers: dict[str, Any]) -> HttpTargetIn:
    return HttpTargetIn.model_validate(
        {"type": "http", "url": "https://example.com/hook", "headers": headers}
    )


def _job(target: HttpTarget) -> Job:
    return Job(
        id="job_1",
        tenant="acme",
        run_at=T0,
        execution_id="ex_1",
        target=target,
        payload={},
        retry=RetryPolicy(),
        priority=Priority.NORMAL,
        created_at=T0,
    )


# -- request conversion ------------------------------------------------------------------------


def test_a_secret_header_becomes_a_reference_and_plain_headers_stay_strings() -> None:
    # Given a target with one plain and one secret header
    body = _target_in({"X-Team": "billing", "Authorization": {"secret": TOKEN_NAME}})
    # When it is converted to the domain
    target = domain_target(body)
    # Then the secret header is a reference by name, the plain one a string
    assert isinstance(target, HttpTarget)
    assert target.headers == {"X-Team": "billing", "Authorization": SecretRef(TOKEN_NAME)}
    assert target.secret_refs == {"Authorization": SecretRef(TOKEN_NAME)}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param({"X-Key": {"secret": 5}}, "X-Key: a secret reference is", id="name_not_str"),
        pytest.param(
            {"X-Key": {"secret": TOKEN_NAME, "version": "1"}},
            "X-Key: a secret reference is",
            id="extra_key",
        ),
        pytest.param({"X-Key": {"name": TOKEN_NAME}}, "a secret reference is", id="wrong_key"),
        pytest.param(
            {"X-Key": {"secret": "arn:aws:secretsmanager:us-east-1:1:secret:cronwheel/acme/x"}},
            "not an ARN",
            id="arn",
        ),
        pytest.param({"X-Key": {"secret": ""}}, "1-512", id="empty_name"),
        pytest.param({"X-Key": 42}, "X-Key: the value is a string or", id="number"),
        pytest.param({"Bad Name": "x"}, "not a valid header name", id="space_in_name"),
    ],
)
def test_malformed_header_values_are_refused_naming_the_header(
    headers: dict[str, Any], expected: str
) -> None:
    # Given a header that is neither a string nor {"secret": name} / When validated
    with pytest.raises(ValidationError) as refused:
        _target_in(headers)
    # Then the message says which header and what shape is expected
    assert expected in str(refused.value)


def test_a_header_value_with_a_line_break_is_refused_without_echoing_it() -> None:
    # Given a plain header value that would inject a second header
    value = "token-7f3a\r\nX-Injected: yes"
    # When validated / Then it is refused, and the value is not repeated in the message
    with pytest.raises(ValidationError) as refused:
        _target_in({"Authorization": value})
    message = refused.value.errors()[0]["msg"]
    assert "Authorization" in message and "control characters" in message
    assert "token-7f3a" not in message


# -- tenancy -----------------------------------------------------------------------------------


def test_a_tenant_may_reference_its_own_secrets() -> None:
    target = HttpTarget(url="https://example.com", headers={"A": SecretRef(TOKEN_NAME)})
    check_secret_refs(target, "acme")  # no error
    check_secret_refs(SqsTarget(queue_url="https://sqs/q"), "acme")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("cronwheel/globex/billing-token", id="other_tenant"),
        pytest.param("cronwheel/acmecorp/billing-token", id="tenant_id_as_prefix"),
        pytest.param("cronwheel/acme/", id="bare_prefix"),
        pytest.param("prod/db-password", id="outside_cronwheel"),
        pytest.param("cronwheel/billing-token", id="no_tenant_segment"),
    ],
)
def test_a_reference_outside_the_tenant_prefix_is_refused(name: str) -> None:
    # Given acme's target referencing a secret that is not under cronwheel/acme/
    target = HttpTarget(url="https://example.com", headers={"Authorization": SecretRef(name)})
    # When checked / Then it is a 400 naming the header and the allowed prefix
    with pytest.raises(InvalidArgument) as refused:
        check_secret_refs(target, "acme")
    assert refused.value.field == "target.headers.Authorization"
    assert "cronwheel/acme/<name>" in refused.value.message


# -- storage and presentation ------------------------------------------------------------------


def test_the_stored_target_keeps_only_the_reference() -> None:
    # Given a target with a secret header
    target = HttpTarget(
        url="https://example.com", headers={"Authorization": SecretRef(TOKEN_NAME), "X": "y"}
    )
    # When it is written as a stored document and read back
    doc = target_to_doc(target)
    # Then the document holds the name in the API's own shape, and reads back the same
    assert doc["headers"] == {"Authorization": {"secret": TOKEN_NAME}, "X": "y"}
    assert target_from_doc(doc) == target
    assert job_from_item(job_to_item(_job(target))).target == target


def test_the_api_returns_the_reference_as_it_was_given() -> None:
    # Given a job whose target has a secret header
    job = _job(
        HttpTarget(url="https://example.com", headers={"Authorization": SecretRef(TOKEN_NAME)})
    )
    # When presented / Then the header is shown as the reference
    assert job_out(job, None).target["headers"] == {"Authorization": {"secret": TOKEN_NAME}}


# -- resolution at call time -------------------------------------------------------------------


class FakeSecrets(SecretsProvider):
    """Powertools' provider (its cache included) over a dict instead of Secrets Manager."""

    def __init__(self, values: dict[str, str | bytes]) -> None:
        super().__init__(boto3_client=object())  # type: ignore[arg-type]
        self.values = values
        self.reads: list[str] = []

    def _get(self, name: str, **sdk_options: Any) -> str | bytes:
        self.reads.append(name)
        if name not in self.values:
            raise ClientError(
                {"Error": {"Code": "ResourceNotFoundException", "Message": "not found"}},
                "GetSecretValue",
            )
        return self.values[name]


def _resolver(values: dict[str, str | bytes]) -> tuple[SecretResolver, FakeSecrets]:
    fake = FakeSecrets(values)
    return SecretResolver("us-east-1", None, max_age_s=60, provider=fake), fake


def test_secret_headers_are_resolved_and_cached() -> None:
    # Given a resolver over one secret
    resolver, fake = _resolver({TOKEN_NAME: "Bearer 7f3a"})
    headers = {"Authorization": SecretRef(TOKEN_NAME), "X-Team": "billing"}
    # When the headers are resolved twice
    first = resolver.resolve_headers(headers)
    second = resolver.resolve_headers(headers)
    # Then the value is sent, plain headers pass through, and the secret was read once
    assert first == second == {"Authorization": "Bearer 7f3a", "X-Team": "billing"}
    assert fake.reads == [TOKEN_NAME]


def test_a_missing_secret_is_a_clear_error_naming_it() -> None:
    resolver, _ = _resolver({})
    with pytest.raises(SecretUnavailable) as missing:
        resolver.resolve_headers({"Authorization": SecretRef(TOKEN_NAME)})
    assert str(missing.value) == (
        f"secret {TOKEN_NAME} could not be read (ResourceNotFoundException)"
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        pytest.param("token-7f3a\r\nX-Injected: yes", "not a valid header value", id="crlf"),
        pytest.param("token-7f3a\u20ac", "not a valid header value", id="not_latin1"),
        pytest.param(b"token-7f3a", "binary", id="binary"),
    ],
)
def test_a_value_unusable_as_a_header_fails_without_showing_it(
    value: str | bytes, reason: str
) -> None:
    resolver, _ = _resolver({TOKEN_NAME: value})
    with pytest.raises(SecretUnavailable) as unusable:
        resolver.resolve_headers({"Authorization": SecretRef(TOKEN_NAME)})
    assert str(unusable.value).startswith(f"secret {TOKEN_NAME} could not be read")
    assert reason in str(unusable.value)
    assert "7f3a" not in str(unusable.value)
