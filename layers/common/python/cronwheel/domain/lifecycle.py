"""How an execution moves between states. Pure: the caller writes the result conditionally."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from cronwheel.domain.model import Attempt, Execution, ExecutionState, Outcome
from cronwheel.domain.retry import attempts_left, backoff_delay_s


@dataclass(frozen=True)
class AttemptResult:
    outcome: Outcome
    http_status: int | None = None
    error: str | None = None
    duration_ms: int | None = None
    response_excerpt: str | None = None


def claim(execution: Execution, now: datetime, lease: timedelta) -> Execution:
    """Start the next attempt: attempt + 1, fencing token + 1, a worker lease."""
    attempt = execution.attempt + 1
    token = execution.fencing_token + 1
    return replace(
        execution,
        state=ExecutionState.RUNNING,
        attempt=attempt,
        fencing_token=token,
        started_at=now,
        lease_expires_at=now + lease,
        next_attempt_at=None,
        attempts=[
            *execution.attempts,
            Attempt(attempt=attempt, started_at=now, fencing_token=token),
        ],
    )


def _finish_attempt(execution: Execution, now: datetime, result: AttemptResult) -> list[Attempt]:
    current = replace(
        execution.attempts[-1],
        finished_at=now,
        outcome=result.outcome,
        http_status=result.http_status,
        error=result.error,
        duration_ms=result.duration_ms,
        response_excerpt=result.response_excerpt,
    )
    return [*execution.attempts[:-1], current]


def complete(execution: Execution, now: datetime, result: AttemptResult) -> Execution:
    """Record a finished attempt: success, a retry after backoff, or dead when none is left."""
    attempts = _finish_attempt(execution, now, result)
    if result.outcome is Outcome.SUCCEEDED:
        return replace(
            execution,
            state=ExecutionState.SUCCEEDED,
            finished_at=now,
            lease_expires_at=None,
            reason=None,
            attempts=attempts,
        )
    if attempts_left(execution.retry, execution.attempt):
        delay = backoff_delay_s(execution.retry, execution.attempt, execution.id)
        return replace(
            execution,
            state=ExecutionState.RETRY_SCHEDULED,
            next_attempt_at=now + timedelta(seconds=delay),
            lease_expires_at=None,
            reason=result.error,
            attempts=attempts,
        )
    last = result.error or result.outcome.value
    return replace(
        execution,
        state=ExecutionState.DEAD,
        finished_at=now,
        lease_expires_at=None,
        reason=f"max_attempts_exhausted: {last}",
        attempts=attempts,
    )
