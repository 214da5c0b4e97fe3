"""Long jobs, the pure parts: which jobs are long, their leases, the state machine definition,
the hand-over message and what the target is told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from pynamodb.attributes import UTCDateTimeAttribute

from cronwheel.dispatch_queue import DispatchMessage
from cronwheel.domain import lifecycle
from cronwheel.domain.long_jobs import (
    DEFAULT_HEARTBEAT_S,
    MAX_ACCEPT_S,
    accept_timeout_s,
    heartbeat_lease_end,
    is_long_job,
)
from cronwheel.domain.model import (
    Execution,
    HttpTarget,
    Priority,
    RetryPolicy,
    SqsTarget,
    Target,
    Trigger,
)
from cronwheel.long_job_machine import (
    ATTEMPT_FAILED,
    ATTEMPT_STALE,
    EXPIRE_STATE,
    EXPIRED_INSTANT,
    SEND_AND_WAIT,
    WAIT_STATE,
    long_job_definition,
    machine_execution_name,
    machine_input,
)
from cronwheel.services.long_jobs import callback_delivery
from cronwheel.settings import Settings
from cronwheel.step_functions import LongJobsNotConfigured, StepFunctionsMachine
from cronwheel.store import codec
from cronwheel.store.tables import ALL_TABLES

T0 = datetime(2026, 9, 26, 9, 0, tzinfo=UTC)
SLACK_S = 30


def _running(target: Target, started: datetime = T0) -> Execution:
    execution = Execution(
        id="ex_0123456789abcdef0123456789",
        tenant="acme",
        scheduled_for=started,
        due_at=started,
        trigger=Trigger.JOB,
        target=target,
        payload={},
        retry=RetryPolicy(),
        priority=Priority.NORMAL,
        created_at=started,
        job_id="job_1",
    )
    return lifecycle.claim(execution, started, timedelta(seconds=60))


@pytest.mark.parametrize(
    ("target", "long"),
    [
        pytest.param(HttpTarget(url="http://t/x"), False, id="http_default"),
        pytest.param(HttpTarget(url="http://t/x", timeout_s=840), False, id="inline_limit"),
        pytest.param(HttpTarget(url="http://t/x", timeout_s=841), True, id="over_inline_limit"),
        pytest.param(HttpTarget(url="http://t/x", callback=True), True, id="callback"),
        pytest.param(SqsTarget(queue_url="https://sqs/q"), False, id="sqs"),
    ],
)
def test_long_jobs_are_callback_targets_or_over_840_s(target: Target, long: bool) -> None:
    assert is_long_job(target) is long


def test_heartbeat_interval_defaults_and_survives_the_store() -> None:
    target = HttpTarget(url="http://t/x", callback=True, heartbeat_s=7)
    assert HttpTarget(url="http://t/x").heartbeat_s == DEFAULT_HEARTBEAT_S
    assert codec.target_from_doc(codec.target_to_doc(target)) == target
    # Targets saved before the field existed read with the default.
    assert codec.target_from_doc({"type": "http", "url": "http://t/x"}).heartbeat_s == 60


@pytest.mark.parametrize(
    ("heartbeat_s", "timeout_s", "now_s", "lease_s"),
    [
        pytest.param(60, 3600, 10, 10 + 60 + SLACK_S, id="interval_plus_slack"),
        pytest.param(4, 3600, 10, 10 + 4 + 4, id="grace_at_most_the_interval"),
        pytest.param(60, 100, 90, 100 + SLACK_S, id="never_past_the_timeout"),
    ],
)
def test_a_heartbeat_moves_the_lease(
    heartbeat_s: int, timeout_s: int, now_s: int, lease_s: int
) -> None:
    target = HttpTarget(
        url="http://t/x", callback=True, heartbeat_s=heartbeat_s, timeout_s=timeout_s
    )
    now = T0 + timedelta(seconds=now_s)
    assert heartbeat_lease_end(_running(target), now, SLACK_S) == T0 + timedelta(seconds=lease_s)


def test_the_delivery_tells_the_target_to_heartbeat_and_waits_only_for_acceptance() -> None:
    target = HttpTarget(
        url="http://t/x", headers={"X-Team": "a"}, timeout_s=3600, heartbeat_s=20, callback=True
    )
    delivered = callback_delivery(_running(target))
    assert isinstance(delivered.target, HttpTarget)
    assert delivered.target.headers == {
        "X-Team": "a",
        "X-Cronwheel-Callback": "true",
        "X-Cronwheel-Heartbeat-Seconds": "20",
        "X-Cronwheel-Deadline": "2026-09-26T10:00:00Z",
    }
    assert delivered.target.timeout_s == accept_timeout_s(target) == 20
    assert accept_timeout_s(HttpTarget(url="http://t/x", timeout_s=3600)) == MAX_ACCEPT_S


def test_definition_waits_for_the_task_token_with_heartbeat_and_timeout_from_input() -> None:
    definition = long_job_definition(dispatch_queue_url="https://q", executions_table="ex")
    wait = definition["States"][definition["StartAt"]]
    assert definition["StartAt"] == WAIT_STATE
    assert wait["Resource"] == SEND_AND_WAIT
    assert wait["Parameters"]["QueueUrl"] == "https://q"
    assert wait["Parameters"]["MessageBody"]["task_token.$"] == "$$.Task.Token"
    assert wait["HeartbeatSecondsPath"] == "$.heartbeat_s"
    assert wait["TimeoutSecondsPath"] == "$.timeout_s"
    # A recorded failure ends the run; a lost heartbeat, a timeout or a task failure expires
    # the lease instead, for the sweeper to retry or end the execution.
    recorded, lost = wait["Catch"]
    assert set(recorded["ErrorEquals"]) == {ATTEMPT_FAILED, ATTEMPT_STALE}
    assert set(lost["ErrorEquals"]) == {
        "States.Timeout",
        "States.HeartbeatTimeout",
        "States.TaskFailed",
    }
    assert lost["Next"] == EXPIRE_STATE


def test_definition_expires_the_lease_only_of_the_attempt_it_runs() -> None:
    definition = long_job_definition(dispatch_queue_url="https://q", executions_table="ex")
    expire = definition["States"][EXPIRE_STATE]["Parameters"]
    assert expire["TableName"] == "ex"
    assert expire["ConditionExpression"] == "#state = :running AND fencing_token = :token"
    assert expire["ExpressionAttributeValues"][":running"] == {"S": "running"}
    # Written in the store's own instant format, so the execution still reads back, and
    # sorted before any real instant, so the sweep index finds it at once.
    attribute = UTCDateTimeAttribute()
    assert attribute.deserialize(EXPIRED_INSTANT) == datetime(1970, 1, 1, tzinfo=UTC)
    assert attribute.serialize(T0) > EXPIRED_INSTANT
    # Every path ends in a terminal state.
    for name, state in definition["States"].items():
        assert state.get("Next") in definition["States"] or state["Type"] in {"Succeed", "Fail"}, (
            name
        )


@pytest.mark.parametrize(
    ("heartbeat_s", "timeout_s", "expected"),
    [
        pytest.param(60, 3600, (60, 3600), id="as_given"),
        pytest.param(60, 30, (29, 30), id="heartbeat_below_timeout"),
        pytest.param(60, 1, (1, 2), id="shortest_timeout"),
    ],
)
def test_machine_input_keeps_the_heartbeat_below_the_timeout(
    heartbeat_s: int, timeout_s: int, expected: tuple[int, int]
) -> None:
    document = machine_input(
        execution_id="ex_1",
        fencing_token=3,
        due_at=T0,
        heartbeat_s=heartbeat_s,
        timeout_s=timeout_s,
    )
    assert (document["heartbeat_s"], document["timeout_s"]) == expected
    assert document["token"] == 3 and document["due_at"] == "2026-09-26T09:00:00Z"


def test_one_machine_execution_per_attempt() -> None:
    assert machine_execution_name("ex_1", 3) == "ex_1-3"
    assert machine_execution_name("ex_1", 3) != machine_execution_name("ex_1", 4)


def test_hand_over_message_round_trips_and_plain_messages_are_unchanged() -> None:
    hand_over = DispatchMessage("ex_1", 3, T0, task_token="tok")
    assert DispatchMessage.from_json(hand_over.to_json()) == hand_over
    plain = DispatchMessage("ex_1", 3, T0)
    assert "task_token" not in plain.to_json()
    assert DispatchMessage.from_json(plain.to_json()).task_token is None
    # As the state machine writes it (its MessageBody): the instant with a Z.
    body = '{"execution_id": "ex_1", "token": 3, "due_at": "2026-09-26T09:00:00Z", "task_token": "tok"}'
    assert DispatchMessage.from_json(body) == hand_over


def _machine(arn: str | None = "arn:aws:states:us-east-1:123456789012:stateMachine:lj") -> Any:
    client = boto3.client(
        "stepfunctions", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    settings = Settings.from_env(
        {
            **Settings.environment(
                stage="test",
                table_names={t.logical_name: t.logical_name for t in ALL_TABLES},
                dispatch_queue_url="https://sqs/q",
                shards=1,
                lookahead_s=10,
                allow_private_egress=False,
                long_job_state_machine_arn=arn,
            )
        }
    )
    return StepFunctionsMachine(settings, client), Stubber(client)


def test_starting_an_attempt_twice_starts_it_once() -> None:
    machine, stubber = _machine()
    stubber.add_client_error("start_execution", service_error_code="ExecutionAlreadyExists")
    with stubber:
        arn = machine.start("ex_1", 3, {"execution_id": "ex_1"})
    assert arn == "arn:aws:states:us-east-1:123456789012:execution:lj:ex_1-3"


def test_without_a_machine_long_jobs_are_refused_before_any_call() -> None:
    machine, stubber = _machine(arn=None)
    with stubber, pytest.raises(LongJobsNotConfigured):
        machine.start("ex_1", 3, {})


@pytest.mark.parametrize("code", ["TaskTimedOut", "TaskDoesNotExist", "ThrottlingException"])
def test_reports_to_a_task_never_fail_the_caller(code: str) -> None:
    machine, stubber = _machine()
    stubber.add_client_error("send_task_heartbeat", service_error_code=code)
    stubber.add_client_error("send_task_success", service_error_code=code)
    with stubber:
        machine.heartbeat("tok")
        machine.succeed("tok", {"execution_id": "ex_1"})
    stubber.assert_no_pending_responses()
