"""Domain rules, no AWS: backoff, lifecycle, ids, signing, instants, settings."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronwheel.domain import lifecycle
from cronwheel.domain.delivery import build_delivery
from cronwheel.domain.ids import execution_id, shard_of
from cronwheel.domain.instants import format_instant, parse_instant
from cronwheel.domain.lifecycle import AttemptResult
from cronwheel.domain.model import (
    Backoff,
    Execution,
    ExecutionState,
    HttpTarget,
    Outcome,
    Priority,
    RetryPolicy,
    Role,
    Trigger,
)
from cronwheel.domain.retry import backoff_delay_s
from cronwheel.domain.signing import signature, verify
from cronwheel.errors import InvalidArgument
from cronwheel.settings import Settings, SettingsError

T0 = datetime(2026, 9, 26, 9, 0, tzinfo=UTC)


def _execution(**changes: object) -> Execution:
    base = Execution(
        id="ex_1",
        tenant="acme",
        job_id="job_1",
        scheduled_for=T0,
        due_at=T0,
        trigger=Trigger.JOB,
        target=HttpTarget(url="http://t/x"),
        payload={"a": 1},
        retry=RetryPolicy(max_attempts=3, initial_s=10, max_s=25),
        priority=Priority.NORMAL,
        created_at=T0,
        state=ExecutionState.QUEUED,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("backoff", "attempt", "low", "high"),
    [
        pytest.param(Backoff.EXPONENTIAL, 1, 5, 10, id="exponential_first"),
        pytest.param(Backoff.EXPONENTIAL, 2, 10, 20, id="exponential_second"),
        pytest.param(Backoff.EXPONENTIAL, 5, 12.5, 25, id="exponential_capped_at_max"),
        pytest.param(Backoff.LINEAR, 2, 10, 20, id="linear_second"),
        pytest.param(Backoff.FIXED, 4, 5, 10, id="fixed"),
    ],
)
def test_backoff_grows_by_policy_with_equal_jitter(
    backoff: Backoff, attempt: int, low: float, high: float
) -> None:
    policy = RetryPolicy(max_attempts=10, backoff=backoff, initial_s=10, max_s=25)
    delays = {backoff_delay_s(policy, attempt, f"ex_{n}") for n in range(50)}
    assert all(low <= d <= high for d in delays)
    assert len(delays) > 40  # jitter spreads executions apart
    assert backoff_delay_s(policy, attempt, "ex_1") == backoff_delay_s(policy, attempt, "ex_1")


def test_claim_increments_attempt_and_fencing_token_and_sets_a_lease() -> None:
    running = lifecycle.claim(_execution(), T0, timedelta(seconds=60))
    assert (running.state, running.attempt, running.fencing_token) == (ExecutionState.RUNNING, 1, 1)
    assert running.lease_expires_at == T0 + timedelta(seconds=60)
    assert running.attempts[-1].fencing_token == 1


def test_failure_with_attempts_left_schedules_a_retry_then_dead_after_the_last() -> None:
    execution = _execution()
    for _ in (1, 2):
        execution = lifecycle.claim(execution, T0, timedelta(seconds=60))
        execution = lifecycle.complete(
            execution, T0, AttemptResult(Outcome.FAILED, http_status=500, error="HTTP 500")
        )
        assert execution.state is ExecutionState.RETRY_SCHEDULED
        assert execution.next_attempt_at is not None and execution.next_attempt_at > T0
    execution = lifecycle.claim(execution, T0, timedelta(seconds=60))
    execution = lifecycle.complete(execution, T0, AttemptResult(Outcome.TIMEOUT, error="timeout"))
    assert execution.state is ExecutionState.DEAD
    assert execution.reason == "max_attempts_exhausted: timeout"
    assert [a.outcome for a in execution.attempts] == [
        Outcome.FAILED,
        Outcome.FAILED,
        Outcome.TIMEOUT,
    ]


def test_execution_ids_are_derived_from_the_occurrence() -> None:
    assert execution_id("sch_1", T0, Trigger.SCHEDULE) == execution_id(
        "sch_1", T0, Trigger.SCHEDULE
    )
    assert execution_id("sch_1", T0, Trigger.SCHEDULE) != execution_id("sch_1", T0, Trigger.MANUAL)
    assert execution_id("sch_1", T0, Trigger.SCHEDULE) != execution_id(
        "sch_1", T0 + timedelta(minutes=1), Trigger.SCHEDULE
    )


def test_shards_are_stable_and_spread() -> None:
    shards = [shard_of(f"sch_{n}", 16) for n in range(1600)]
    assert shard_of("sch_7", 16) == shards[7]
    assert min(shards.count(k) for k in range(16)) > 60


def test_signature_verifies_under_either_secret_during_rotation() -> None:
    body = b'{"a":1}'
    header = signature("new", "1700000000", body)
    assert verify(["old", "new"], "1700000000", body, header)
    assert not verify(["old"], "1700000000", body, header)
    assert not verify(["new"], "1700000000", body + b" ", header)


def test_delivery_carries_the_contract_headers() -> None:
    running = lifecycle.claim(_execution(), T0, timedelta(seconds=60))
    delivery = build_delivery(running, "secret", T0, {"X-Team": "a"})
    assert delivery.headers["Idempotency-Key"] == "ex_1"
    assert delivery.headers["X-Cronwheel-Fencing-Token"] == "1"
    assert delivery.headers["X-Cronwheel-Timestamp"] == str(int(T0.timestamp()))
    assert verify(
        ["secret"],
        delivery.headers["X-Cronwheel-Timestamp"],
        delivery.body,
        delivery.headers["X-Cronwheel-Signature"],
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2026-09-26T11:00:00+02:00", "2026-09-26T09:00:00Z", id="offset_normalised"),
        pytest.param(
            "2026-09-26T09:00:00.250Z", "2026-09-26T09:00:00.250Z", id="milliseconds_kept"
        ),
        pytest.param("2026-09-26t09:00:00z", "2026-09-26T09:00:00Z", id="lowercase"),
    ],
)
def test_instants_normalise_to_utc(text: str, expected: str) -> None:
    assert format_instant(parse_instant(text, field="run_at")) == expected


@pytest.mark.parametrize("text", ["2026-09-26T09:00:00", "tomorrow", ""])
def test_bad_instants_name_the_field(text: str) -> None:
    with pytest.raises(InvalidArgument) as error:
        parse_instant(text, field="run_at")
    assert error.value.field == "run_at"


def test_roles_are_ordered() -> None:
    assert Role.ADMIN.allows(Role.OPERATOR) and Role.OPERATOR.allows(Role.VIEWER)
    assert not Role.VIEWER.allows(Role.OPERATOR)


def test_settings_fail_fast_naming_the_missing_variable() -> None:
    with pytest.raises(SettingsError, match="CRONWHEEL_TABLE_SCHEDULES"):
        Settings.from_env({"CRONWHEEL_SHARDS": "4"})
    with pytest.raises(SettingsError, match="CRONWHEEL_SHARDS"):
        Settings.from_env({})
