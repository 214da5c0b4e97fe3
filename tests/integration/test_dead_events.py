"""Dead events: an execution that ends `dead` is announced once on the stage's topic, to the
owning tenant's subscription only; if SNS cannot take it, the sweeper announces it later."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from cronwheel.clock import ManualClock
from cronwheel.dispatch_queue import DispatchMessage
from cronwheel.domain.model import (
    Backoff,
    ExecutionState,
    HttpTarget,
    Priority,
    RetryPolicy,
    Tenant,
)
from cronwheel.runtime import Runtime
from cronwheel.services.dispatch import Dispatcher
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel.services.sweeper import Sweeper
from cronwheel.settings import DEAD_TOPIC_ENV, Settings
from cronwheel.store.store import ExecutionQuery
from tests.integration.conftest import ACME, provision
from tests.support.fake_target import FakeTarget

TOPIC = "it-dead-executions"


@pytest.fixture
def world(aws: None, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    monkeypatch.setattr("cronwheel.dispatch_queue.delay_for", lambda due_at, now: 0)
    env = provision("it")
    env[DEAD_TOPIC_ENV] = _sns().create_topic(Name=TOPIC)["TopicArn"]
    rt = Runtime.build(Settings.from_env(env), clock=clock)
    rt.store.put_tenant(Tenant(id="acme", signing_secrets=["s3cret"]))
    yield rt


def _sns() -> Any:
    return boto3.client("sns", region_name="us-east-1")


def _subscriber(rt: Runtime, name: str, tenant: str) -> str:
    """An SQS queue subscribed to the topic for one tenant's events, as a tenant would."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    url: str = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    _sns().subscribe(
        TopicArn=rt.settings.dead_letter_topic_arn,
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true", "FilterPolicy": json.dumps({"tenant": [tenant]})},
    )
    return url


def _received(url: str) -> list[dict[str, Any]]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600)
    return [json.loads(m["Body"]) for m in got.get("Messages", [])]


def _run_poison_job(rt: Runtime, clock: ManualClock) -> str:
    """A job whose target always fails, run through both of its attempts."""
    submitted = JobService(rt.store, rt.queue, rt.settings).submit(
        ACME,
        JobRequest(
            target=HttpTarget(url="http://127.0.0.1:9/fail"),
            payload={"report": "daily"},
            retry=RetryPolicy(max_attempts=2, backoff=Backoff.FIXED, initial_s=10, max_s=10),
            priority=Priority.NORMAL,
        ),
        clock.now(),
    )
    target = FakeTarget(lambda delivery: 503)
    dispatcher = Dispatcher(rt.store, rt.queue, target, rt.sqs, rt.settings, clock)  # type: ignore[arg-type]
    first = dispatcher.handle(DispatchMessage(submitted.execution.id, 0, clock.now()))
    assert first.state is ExecutionState.RETRY_SCHEDULED
    clock.advance(10)
    last = dispatcher.handle(DispatchMessage(submitted.execution.id, 1, clock.now()))
    assert last.state is ExecutionState.DEAD
    return submitted.execution.id


def _in_sweep_index(rt: Runtime, execution_id: str) -> bool:
    far = rt.clock.now().replace(year=2100)
    return any(
        e.id == execution_id
        for shard in range(rt.settings.shards)
        for e in rt.store.sweep_candidates(shard, far, 100)
    )


def test_a_dead_execution_is_announced_to_its_tenant_only(
    world: Runtime, clock: ManualClock
) -> None:
    # Given acme and globex each subscribed to their own events
    acme = _subscriber(world, "acme-alerts", "acme")
    globex = _subscriber(world, "globex-alerts", "globex")

    # When an acme job uses up its attempts
    execution_id = _run_poison_job(world, clock)

    # Then acme receives one event naming the job, the execution, the attempts and the reason
    [event] = _received(acme)
    execution = world.store.get_execution(execution_id, consistent=True)
    assert execution is not None
    assert event == {
        "type": "execution.dead",
        "stage": "test",
        "tenant": "acme",
        "execution_id": execution_id,
        "schedule_id": None,
        "job_id": execution.job_id,
        "trigger": "job",
        "scheduled_for": event["scheduled_for"],
        "attempts": 2,
        "reason": "max_attempts_exhausted: target answered HTTP 503",
        "last_error": "target answered HTTP 503",
        "last_http_status": 503,
        "finished_at": event["finished_at"],
    }
    # And globex receives nothing, and nothing is left for the sweeper
    assert _received(globex) == []
    assert not _in_sweep_index(world, execution_id)


def test_an_event_sns_refused_is_published_by_the_sweeper_later(
    world: Runtime, clock: ManualClock
) -> None:
    # Given the topic is gone when the execution goes dead (SNS refuses the publication)
    _sns().delete_topic(TopicArn=world.settings.dead_letter_topic_arn)
    execution_id = _run_poison_job(world, clock)

    # Then the execution is dead all the same, and stays in the sweep index
    page = world.store.list_executions(ExecutionQuery(tenant="acme"))
    assert [e.state for e in page.items] == [ExecutionState.DEAD]
    assert _in_sweep_index(world, execution_id)
    sweeper = Sweeper(world.store, world.queue, world.settings)

    # When the sweeper runs after the grace while SNS still refuses, it keeps it for later
    report = sweeper.sweep(clock.advance(world.settings.delivery_grace_s + 1))
    assert report.followed_up == [] and _in_sweep_index(world, execution_id)

    # And once SNS takes messages again, the next sweep after another grace publishes it once
    _sns().create_topic(Name=TOPIC)
    alerts = _subscriber(world, "acme-alerts", "acme")
    assert sweeper.sweep(clock.advance(1)).followed_up == []  # not before its new sweep time
    report = sweeper.sweep(clock.advance(world.settings.delivery_grace_s))
    assert report.followed_up == [execution_id]
    assert [e["execution_id"] for e in _received(alerts)] == [execution_id]
    assert not _in_sweep_index(world, execution_id)
    # And a later sweep has nothing more to announce
    assert sweeper.sweep(clock.advance(600)).followed_up == []
