"""The dispatch DLQ on the provisioned queues, and `cronwheel dlq list` / `redrive` against it."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from cronwheel.clock import ManualClock
from cronwheel.dispatch_queue import DispatchMessage
from cronwheel.domain.model import ExecutionState, HttpTarget, Priority, RetryPolicy
from cronwheel.runtime import Runtime
from cronwheel.services.dispatch import Dispatcher
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel.store.queues import DISPATCH
from cronwheel_local.cli import main
from tests.integration.conftest import ACME
from tests.support.fake_target import FakeTarget


def _sqs() -> Any:
    return boto3.client("sqs", region_name="us-east-1")


def _dlq_url(rt: Runtime) -> str:
    return rt.settings.dispatch_queue_url + "-dlq"


def _fail_until_dead_lettered(queue_url: str) -> list[str]:
    """A consumer that never deletes: each receive counts, and SQS moves the message on."""
    received: list[str] = []
    while True:
        got = (
            _sqs()
            .receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
            .get("Messages", [])
        )
        if not got:
            return received
        received += [m["Body"] for m in got]


def _visible(queue_url: str) -> list[str]:
    got = _sqs().receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=30)
    return [m["Body"] for m in got.get("Messages", [])]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_the_local_dispatch_queue_redrives_as_the_spec_says(rt: Runtime) -> None:
    attributes = _sqs().get_queue_attributes(
        QueueUrl=rt.settings.dispatch_queue_url, AttributeNames=["All"]
    )["Attributes"]
    redrive = json.loads(attributes["RedrivePolicy"])
    assert int(redrive["maxReceiveCount"]) == DISPATCH.max_receive_count
    assert redrive["deadLetterTargetArn"].endswith(":it-dispatch-dlq")
    assert int(attributes["VisibilityTimeout"]) == DISPATCH.visibility_timeout_s


def test_messages_that_keep_failing_are_listed_then_redriven_and_run_once(
    rt: Runtime, clock: ManualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a queued job whose message the dispatcher failed on five times, and a garbage message
    submitted = JobService(rt.store, rt.queue, rt.settings).submit(
        ACME,
        JobRequest(
            target=HttpTarget(url="http://127.0.0.1:9/x"),
            payload={},
            retry=RetryPolicy(),
            priority=Priority.NORMAL,
        ),
        clock.now(),
    )
    execution_id = submitted.execution.id
    _sqs().send_message(QueueUrl=rt.settings.dispatch_queue_url, MessageBody="not a message")
    receives = _fail_until_dead_lettered(rt.settings.dispatch_queue_url)
    assert len(receives) == 2 * DISPATCH.max_receive_count
    queue = rt.settings.dispatch_queue_url

    # When the DLQ is listed
    code, out = _cli(capsys, "dlq", "list", "--queue-url", queue, "--json")

    # Then both messages are there with the execution id, token and first receive time
    assert code == 0
    listing = json.loads(out)
    assert listing["count"] == 2
    by_execution = {m["execution_id"]: m for m in listing["messages"]}
    assert set(by_execution) == {execution_id, None}
    assert by_execution[execution_id]["token"] == 0
    assert by_execution[execution_id]["first_received_at"].endswith("Z")
    assert by_execution[None]["body"] == "not a message"
    # And listing left them in place; the table form says the same
    code, table = _cli(capsys, "dlq", "list", "--queue-url", queue)
    assert code == 0 and table.startswith("2 message(s) in ") and execution_id in table

    # When they are redriven
    code, out = _cli(capsys, "dlq", "redrive", "--queue-url", queue)

    # Then the DLQ is empty and the dispatch queue has them again
    assert code == 0 and "moved 2 message(s)" in out
    assert _visible(_dlq_url(rt)) == []
    bodies = _visible(queue)
    assert sorted(bodies, key=len) == sorted(
        ["not a message", DispatchMessage(execution_id, 0, submitted.execution.due_at).to_json()],
        key=len,
    )

    # And the dispatcher runs the execution once: a second copy of the message is a no-op
    target = FakeTarget()
    dispatcher = Dispatcher(rt.store, rt.queue, target, rt.sqs, rt.settings, clock)  # type: ignore[arg-type]
    message = DispatchMessage.from_json(next(b for b in bodies if b != "not a message"))
    first = dispatcher.handle(message)
    again = dispatcher.handle(message)
    assert first.state is ExecutionState.SUCCEEDED
    assert again.note == "stale"
    assert [d.execution_id for d in target.deliveries] == [execution_id]


def test_dlq_commands_explain_a_missing_queue(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CRONWHEEL_QUEUE_DISPATCH_URL", raising=False)
    assert main(["dlq", "list"]) == 2
    assert "CRONWHEEL_QUEUE_DISPATCH_URL" in capsys.readouterr().err
