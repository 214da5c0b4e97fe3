"""`:heartbeat` and `:complete`: a target reports on its running attempt, by fencing token.

Both are conditional on the execution still running the attempt that holds the token, so a
zombie's report (an attempt reaped, retried, cancelled or already completed) is refused with
`conflict` and changes nothing. A result goes through `record_attempt_end`, the same write as a
short job's, so retries, backoff, `dead` and the follow-ups behave exactly alike. For a long
job, the state machine hears of it too (its task token is kept on the execution).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from cronwheel.dead_events import DeadEventPublisher
from cronwheel.dispatch_queue import DispatchQueue
from cronwheel.domain import lifecycle
from cronwheel.domain.lifecycle import AttemptResult
from cronwheel.domain.long_jobs import heartbeat_lease_end
from cronwheel.domain.model import Execution, ExecutionState, Outcome, Principal, Role
from cronwheel.errors import Conflict
from cronwheel.long_job_machine import ATTEMPT_FAILED
from cronwheel.services.auth import require_role
from cronwheel.services.executions import get_execution
from cronwheel.services.recording import record_attempt_end
from cronwheel.settings import Settings
from cronwheel.step_functions import StepFunctionsMachine
from cronwheel.store.store import Store

# Kept with the attempt like a short job's response excerpt (the first 4 KiB).
OUTPUT_EXCERPT_CHARS = 4096
DEFAULT_FAILURE = "the target reported failure"


@dataclass(frozen=True)
class Completion:
    fencing_token: int
    status: Literal["succeeded", "failed"]
    output: Any = None
    error: str | None = None


def heartbeat(
    store: Store,
    settings: Settings,
    machine: StepFunctionsMachine,
    principal: Principal,
    execution_id: str,
    fencing_token: int,
    now: datetime,
) -> datetime:
    """Extend the attempt's worker lease; returns when it now expires. A heartbeat never
    shortens a lease (a short job's runs for its whole timeout) nor extends it past the
    attempt's timeout."""
    require_role(principal, Role.OPERATOR)
    execution = _running_attempt(store, principal, execution_id, fencing_token)
    lease_end = heartbeat_lease_end(execution, now, settings.worker_lease_slack_s)
    if execution.lease_expires_at is not None:
        lease_end = max(lease_end, execution.lease_expires_at)
    extended = store.extend_lease(
        execution_id, fencing_token=fencing_token, lease_expires_at=lease_end
    )
    if extended is None:
        raise _stale(execution_id)
    if extended.task_token is not None:
        machine.heartbeat(extended.task_token)
    return extended.lease_expires_at


def complete(
    store: Store,
    queue: DispatchQueue,
    settings: Settings,
    machine: StepFunctionsMachine,
    principal: Principal,
    execution_id: str,
    completion: Completion,
    now: datetime,
    dead_events: DeadEventPublisher | None = None,
) -> Execution:
    """Record the attempt's result as the target reports it: `succeeded`, or a failed attempt
    that is retried after backoff or ends `dead`. Returns the execution as written."""
    require_role(principal, Role.OPERATOR)
    running = _running_attempt(store, principal, execution_id, completion.fencing_token)
    # Read after the execution: a token found now belongs to this attempt or to none.
    task_token = store.task_token_of(execution_id)
    finished = lifecycle.complete(running, now, _result(running, completion, now))
    if not record_attempt_end(
        store,
        queue,
        settings,
        finished=finished,
        running_token=completion.fencing_token,
        now=now,
        dead_events=dead_events,
    ):
        raise _stale(execution_id)
    if task_token is not None:
        if finished.state is ExecutionState.SUCCEEDED:
            machine.succeed(
                task_token,
                {"execution_id": execution_id, "fencing_token": completion.fencing_token},
            )
        else:
            machine.fail(task_token, ATTEMPT_FAILED, completion.error or DEFAULT_FAILURE)
    return finished


def _running_attempt(
    store: Store, principal: Principal, execution_id: str, fencing_token: int
) -> Execution:
    execution = get_execution(store, principal, execution_id)
    if execution.state is not ExecutionState.RUNNING:
        raise Conflict(
            f"execution {execution_id} is {execution.state.value}, not running: "
            "this attempt's report is no longer taken",
            field="fencing_token",
        )
    if execution.fencing_token != fencing_token:
        raise _stale(execution_id)
    return execution


def _stale(execution_id: str) -> Conflict:
    return Conflict(
        f"fencing_token is stale: execution {execution_id} is no longer running the attempt "
        "that holds it",
        field="fencing_token",
    )


def _result(running: Execution, completion: Completion, now: datetime) -> AttemptResult:
    started = running.started_at or now
    duration_ms = max(0, int((now - started).total_seconds() * 1000))
    excerpt = None
    if completion.output is not None:
        excerpt = json.dumps(completion.output, separators=(",", ":"))[:OUTPUT_EXCERPT_CHARS]
    if completion.status == "succeeded":
        return AttemptResult(Outcome.SUCCEEDED, duration_ms=duration_ms, response_excerpt=excerpt)
    return AttemptResult(
        Outcome.FAILED,
        error=completion.error or DEFAULT_FAILURE,
        duration_ms=duration_ms,
        response_excerpt=excerpt,
    )
