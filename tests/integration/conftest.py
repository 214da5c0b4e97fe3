"""Services against moto in-process, on the tables and queues the local stack also uses."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from cronwheel.clock import ManualClock
from cronwheel.domain.model import Principal, Role, Tenant
from cronwheel.runtime import Runtime
from cronwheel.settings import Settings
from cronwheel_local.provision import create_queues, create_tables, table_names

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
ACME = Principal(tenant="acme", role=Role.OPERATOR, key_id="key_test")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        yield


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def provision(prefix: str) -> dict[str, str]:
    """Create the tables and queues in moto; returns the environment a deployment would set."""
    names = table_names(prefix)
    create_tables(boto3.client("dynamodb", region_name="us-east-1"), names)
    urls = create_queues(boto3.client("sqs", region_name="us-east-1"), prefix)
    env = Settings.environment(
        stage="test",
        table_names=names,
        dispatch_queue_url=urls["dispatch"],
        shards=2,
        lookahead_s=60,
        allow_private_egress=True,
    )
    env["AWS_REGION"] = "us-east-1"
    return env


@pytest.fixture
def rt(aws: None, clock: ManualClock) -> Runtime:
    runtime = Runtime.build(Settings.from_env(provision("it")), clock=clock)
    runtime.store.put_tenant(Tenant(id="acme", signing_secrets=["s3cret"]))
    return runtime
