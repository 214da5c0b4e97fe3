"""A whole cronwheel (tick, dispatch, sweeper) on moto with a manual clock, whose process can be
made to die before any one of its AWS or target calls.

The firing path is driven the way AWS drives it: ticks per shard, an SQS consumer that leaves a
message in the queue until its delay is over and deletes a batch only after the handler
returned (a death leaves the whole batch to come back after its visibility timeout), and the
sweeper. Every call the handlers make (DynamoDB through PynamoDB, SQS, SNS: all go through
botocore's `_make_api_call`) and every call of the target is a numbered step; `Fuse.kill_at`
makes the process die just before step N, by raising an exception no handler catches.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.client import BaseClient
from moto import mock_aws

from cronwheel.clock import ManualClock
from cronwheel.dispatch_queue import DispatchMessage
from cronwheel.domain.model import Execution, ExecutionState, Tenant
from cronwheel.runtime import Runtime
from cronwheel.services.dispatch import MAX_WAIT_S, Dispatcher
from cronwheel.services.sweeper import Sweeper
from cronwheel.services.tick import Tick
from cronwheel.settings import DEAD_TOPIC_ENV, Settings
from cronwheel.store.store import ExecutionQuery
from tests.integration.conftest import T0, provision
from tests.support.fake_target import Delivery, FakeTarget

FAR_FUTURE = T0 + timedelta(days=3650)
# Past a worker lease (timeout 30 s + slack 30 s) and a shard lease (50 s) in one step; the
# delivery grace (120 s) takes two.
RESUME_STEP_S = 61
MAX_RESUME_STEPS = 20


class ProcessDeath(BaseException):
    """The process stops here. A BaseException: no `except Exception` in the code catches it."""


@dataclass
class Fuse:
    """Numbers the calls the process makes while armed; dies before call `kill_at`."""

    kill_at: int | None = None
    armed: bool = False
    dead: bool = False
    process: str = ""
    calls: list[str] = field(default_factory=list)
    died_before: str | None = None

    def step(self, operation: str) -> None:
        if self.dead:
            raise ProcessDeath("a dead process makes no more calls")
        if not self.armed:
            return
        name = f"{self.process}: {operation}"
        if len(self.calls) + 1 == self.kill_at:
            self.dead, self.died_before = True, name
            raise ProcessDeath(name)
        self.calls.append(name)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Calls made by the test's stand-ins for AWS (the SQS event source) are not steps."""
        armed, dead = self.armed, self.dead
        self.armed = self.dead = False
        try:
            yield
        finally:
            self.armed, self.dead = armed, dead


def count_aws_calls(monkeypatch: pytest.MonkeyPatch, fuse: Fuse) -> None:
    original = BaseClient._make_api_call

    def counted(client: Any, operation_name: str, api_params: Any) -> Any:
        fuse.step(f"{client.meta.service_model.service_name}.{operation_name}")
        return original(client, operation_name, api_params)

    monkeypatch.setattr(BaseClient, "_make_api_call", counted)


def answer_by_path(delivery: Delivery) -> int:
    """`/ok` succeeds, `/fail` always fails, `/flaky` fails its first attempt only."""
    path = delivery.url.rsplit("/", 1)[-1]
    if path == "fail" or (path == "flaky" and delivery.attempt == 1):
        return 500
    return 200


class World:
    """One deployment's worth of tables, queues and topic in moto, and the handlers over it.

    `reset` empties moto and provisions the same names again: a fresh deployment for each run,
    without building new clients (which costs more than the run)."""

    def __init__(self, mock: Any, fuse: Fuse) -> None:
        self._mock = mock
        self.fuse = fuse
        self.settings = self._provision()
        self.rt = Runtime.build(self.settings)
        self._sqs = boto3.client("sqs", region_name="us-east-1")
        self.reset()

    def reset(self) -> None:
        self._mock.reset()
        self._provision()
        self.rt.store.put_tenant(Tenant(id="acme", signing_secrets=["s3cret"]))
        self.clock = ManualClock(T0)
        fuse = self.fuse
        self.target = FakeTarget(answer_by_path, before_call=lambda: fuse.step("target call"))
        self._in_flight: list[str] = []  # receipt handles of a batch whose process died

    def _provision(self) -> Settings:
        env = provision("crash")
        sns = boto3.client("sns", region_name="us-east-1")
        topic_arn = sns.create_topic(Name="crash-dead-executions")["TopicArn"]
        env[DEAD_TOPIC_ENV] = topic_arn
        self.events_url = _subscribe_queue(sns, topic_arn, "crash-dead-events")
        return Settings.from_env(env)

    # -- the handlers, as AWS invokes them ---------------------------------------------------

    def tick(self) -> None:
        self.fuse.process = "tick"
        for shard in range(self.settings.shards):
            owner = f"tick-{uuid.uuid4().hex[:8]}"  # each invocation is a new Lambda request
            Tick(self.rt.store, self.rt.queue, self.settings, shard, owner).run(self.clock.now())

    def dispatch(self) -> None:
        """One invocation of the dispatch function with every message that is due."""
        self.fuse.process = "dispatch"
        dispatcher = Dispatcher(
            self.rt.store,
            self.rt.queue,
            self.target,  # type: ignore[arg-type]
            self.rt.sqs,
            self.settings,
            self.clock,
        )
        batch = self._receive_due()
        self._in_flight = [handle for handle, _ in batch]
        for _, message in batch:
            dispatcher.handle(message)
        with self.fuse.paused():  # the event source deletes the batch once the handler returned
            for handle in self._in_flight:
                self._sqs.delete_message(
                    QueueUrl=self.settings.dispatch_queue_url, ReceiptHandle=handle
                )
        self._in_flight = []

    def sweep(self) -> None:
        self.fuse.process = "sweeper"
        Sweeper(self.rt.store, self.rt.queue, self.settings).sweep(self.clock.now())

    def at(self, seconds: float) -> datetime:
        """Move the clock to T0 + seconds (never back: the dispatcher may have waited a bit)."""
        ahead = (T0 + timedelta(seconds=seconds) - self.clock.now()).total_seconds()
        return self.clock.advance(max(0.0, ahead))

    # -- recovery --------------------------------------------------------------------------

    def recover(self) -> int:
        """After a death: the batch it held comes back, then fresh handlers run minute by
        minute until nothing is left to do. Returns the steps it took."""
        self.fuse.armed = self.fuse.dead = False
        for handle in self._in_flight:  # its visibility timeout ran out
            self._sqs.change_message_visibility(
                QueueUrl=self.settings.dispatch_queue_url, ReceiptHandle=handle, VisibilityTimeout=0
            )
        self._in_flight = []
        for step in range(1, MAX_RESUME_STEPS + 1):
            self.clock.advance(RESUME_STEP_S)
            self.tick()
            self.dispatch()
            self.sweep()
            if self.quiet():
                return step
        raise AssertionError(f"still busy after {MAX_RESUME_STEPS} steps: {self.unfinished()}")

    def quiet(self) -> bool:
        return not self.unfinished() and not self.marked()

    def unfinished(self) -> list[tuple[str, ExecutionState]]:
        return [(e.id, e.state) for e in self.executions() if not e.state.is_terminal]

    def marked(self) -> list[str]:
        """Executions still in the sweep index (something may still have to happen to them)."""
        return [
            e.id
            for shard in range(self.settings.shards)
            for e in self.rt.store.sweep_candidates(shard, FAR_FUTURE, 500)
        ]

    # -- what a user would look at ---------------------------------------------------------

    def executions(self) -> list[Execution]:
        return self.rt.store.list_executions(ExecutionQuery(tenant="acme", limit=500)).items

    def dead_events(self) -> list[dict[str, Any]]:
        events = []
        while True:
            got = self._sqs.receive_message(
                QueueUrl=self.events_url, MaxNumberOfMessages=10, VisibilityTimeout=600
            ).get("Messages", [])
            if not got:
                return events
            events += [json.loads(m["Body"]) for m in got]

    def _receive_due(self) -> list[tuple[str, DispatchMessage]]:
        """Every visible message whose SQS delay is over; later ones stay where they are (the
        tests send with no delay; this is where the delay is honoured)."""
        due_by = self.clock.now() + timedelta(seconds=MAX_WAIT_S)
        due: list[tuple[str, DispatchMessage]] = []
        later: list[str] = []
        with self.fuse.paused():
            while True:
                got = self._sqs.receive_message(
                    QueueUrl=self.settings.dispatch_queue_url,
                    MaxNumberOfMessages=10,
                    VisibilityTimeout=3600,
                ).get("Messages", [])
                if not got:
                    break
                for m in got:
                    message = DispatchMessage.from_json(m["Body"])
                    if message.due_at <= due_by:
                        due.append((m["ReceiptHandle"], message))
                    else:
                        later.append(m["ReceiptHandle"])
            for handle in later:
                self._sqs.change_message_visibility(
                    QueueUrl=self.settings.dispatch_queue_url,
                    ReceiptHandle=handle,
                    VisibilityTimeout=0,
                )
        return due


def _subscribe_queue(sns: Any, topic_arn: str, name: str) -> str:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url: str = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true", "FilterPolicy": json.dumps({"tenant": ["acme"]})},
    )
    return url


@contextmanager
def crash_world(monkeypatch: pytest.MonkeyPatch, fuse: Fuse) -> Iterator[World]:
    """moto and a world in it; `fresh_ids` before each run."""
    with mock_aws() as mock:
        # moto holds delayed messages in real time; `World` honours the delays itself.
        monkeypatch.setattr("cronwheel.dispatch_queue.delay_for", lambda due_at, now: 0)
        count_aws_calls(monkeypatch, fuse)
        yield World(mock, fuse)


def fresh_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same ids in every run, so the same shards and the same sequence of calls."""
    numbers = itertools.count(1)
    for module in ("jobs", "schedules"):
        monkeypatch.setattr(
            f"cronwheel.services.{module}.new_id",
            lambda prefix: f"{prefix}_{next(numbers):024d}",
        )


def occurrence_key(execution: Execution) -> tuple[str, datetime, str]:
    return (execution.source_id, execution.scheduled_for, execution.trigger.value)


def records_by_occurrence(
    executions: list[Execution],
) -> dict[tuple[str, datetime, str], list[str]]:
    grouped: dict[tuple[str, datetime, str], list[str]] = defaultdict(list)
    for execution in executions:
        grouped[occurrence_key(execution)].append(execution.id)
    return grouped
