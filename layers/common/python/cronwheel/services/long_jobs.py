"""Long jobs, the dispatcher's side: start an attempt's state machine, then deliver it.

A long job (a callback target, or `timeout_s` over 840 s) is claimed like any other execution.
Right after the claim the dispatcher starts the long-job state machine for that attempt
(`start`); the machine sends the dispatch queue a message carrying its task token, and the
dispatcher, receiving it, calls the target with the normal signed delivery (`deliver`). A 2xx
answer means "accepted": the attempt stays `running`, its lease now kept alive by the target's
heartbeats, until the target calls `:complete` (`services/callbacks.py`). Any other answer is a
failed attempt, recorded exactly as for a short job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from cronwheel.clock import Clock
from cronwheel.dead_events import DeadEventPublisher
from cronwheel.dispatch_queue import DispatchMessage, DispatchQueue
from cronwheel.domain import lifecycle
from cronwheel.domain.instants import format_instant
from cronwheel.domain.lifecycle import AttemptResult
from cronwheel.domain.long_jobs import (
    accept_timeout_s,
    delivery_lease_end,
    heartbeat_lease_end,
    heartbeat_s,
)
from cronwheel.domain.model import Execution, ExecutionState, HttpTarget, Outcome
from cronwheel.long_job_machine import ATTEMPT_FAILED, ATTEMPT_STALE, machine_input
from cronwheel.services.recording import record_attempt_end
from cronwheel.settings import Settings
from cronwheel.step_functions import LongJobsNotConfigured, StepFunctionsMachine, machine_for
from cronwheel.store.store import Store

logger = Logger(child=True)

# What a long job's target learns from the delivery, besides the usual headers (API.md).
CALLBACK_HEADER = "X-Cronwheel-Callback"
HEARTBEAT_HEADER = "X-Cronwheel-Heartbeat-Seconds"
DEADLINE_HEADER = "X-Cronwheel-Deadline"

CallTarget = Callable[[Execution, datetime], AttemptResult]


@dataclass(frozen=True)
class LongJobStep:
    """What one dispatcher step did to a long job (the dispatcher reports it like its own)."""

    execution_id: str
    tenant: str | None
    state: ExecutionState | None
    note: str
    attempt: int = 0  # the attempt that ended in this step, if one did


class LongJobs:
    def __init__(
        self,
        store: Store,
        queue: DispatchQueue,
        settings: Settings,
        clock: Clock,
        machine: StepFunctionsMachine | None = None,
        dead_events: DeadEventPublisher | None = None,
    ) -> None:
        self._store = store
        self._queue = queue
        self._settings = settings
        self._clock = clock
        self._machine = machine or machine_for(settings)
        self._dead_events = dead_events

    def start(self, running: Execution) -> LongJobStep:
        """Right after the claim: start this attempt's state machine execution. Starting it
        twice starts it once (it is named after the execution and its fencing token)."""
        now = self._clock.now()
        target = running.target
        timeout_s = target.timeout_s if isinstance(target, HttpTarget) else 30
        try:
            self._machine.start(
                running.id,
                running.fencing_token,
                machine_input(
                    execution_id=running.id,
                    fencing_token=running.fencing_token,
                    due_at=now,
                    heartbeat_s=heartbeat_s(target),
                    timeout_s=timeout_s,
                ),
            )
        except (LongJobsNotConfigured, ClientError, BotoCoreError) as error:
            logger.warning(
                "long job not started",
                extra={"execution_id": running.id, "tenant": running.tenant, "error": str(error)},
            )
            failure = AttemptResult(Outcome.FAILED, error=f"long job not started: {error}")
            return self._fail(running, failure, task_token=None)
        # Shorten the claim's lease (the whole timeout) to the hand-over: if the machine's
        # message never arrives, the sweeper retries the attempt after this.
        lease = delivery_lease_end(
            running, now, self._settings.delivery_grace_s, self._settings.worker_lease_slack_s
        )
        self._store.extend_lease(
            running.id, fencing_token=running.fencing_token, lease_expires_at=lease
        )
        return LongJobStep(running.id, running.tenant, ExecutionState.RUNNING, "long job started")

    def deliver(self, message: DispatchMessage, call_target: CallTarget) -> LongJobStep:
        """The machine's hand-over: keep its task token on the execution, call the target."""
        task_token = message.task_token
        assert task_token is not None
        now = self._clock.now()
        execution = self._store.get_execution(message.execution_id, consistent=True)
        if (
            execution is None
            or execution.state is not ExecutionState.RUNNING
            or execution.fencing_token != message.token
        ):
            return self._stale(message, execution, task_token)
        answer_by = now + timedelta(
            seconds=accept_timeout_s(execution.target) + self._settings.worker_lease_slack_s
        )
        # The token is kept before the call: a target may complete before it answers.
        if (
            self._store.extend_lease(
                execution.id,
                fencing_token=execution.fencing_token,
                lease_expires_at=answer_by,
                task_token=task_token,
            )
            is None
        ):
            return self._stale(message, execution, task_token)
        result = call_target(callback_delivery(execution), now)
        if result.outcome is not Outcome.SUCCEEDED:
            return self._fail(execution, result, task_token)
        accepted_at = self._clock.now()
        lease = heartbeat_lease_end(execution, accepted_at, self._settings.worker_lease_slack_s)
        if (
            self._store.extend_lease(
                execution.id, fencing_token=execution.fencing_token, lease_expires_at=lease
            )
            is not None
        ):
            # The target's heartbeat clock starts when it accepts, not when the machine sent
            # the hand-over.
            self._machine.heartbeat(task_token)
        return LongJobStep(execution.id, execution.tenant, ExecutionState.RUNNING, "accepted")

    def _fail(
        self, running: Execution, result: AttemptResult, task_token: str | None
    ) -> LongJobStep:
        """A failed attempt, recorded as a short job's is (retry with backoff, or dead)."""
        finished = lifecycle.complete(running, self._clock.now(), result)
        recorded = record_attempt_end(
            self._store,
            self._queue,
            self._settings,
            finished=finished,
            running_token=running.fencing_token,
            now=self._clock.now(),
            dead_events=self._dead_events,
        )
        if task_token is not None:
            self._machine.fail(task_token, ATTEMPT_FAILED, result.error or result.outcome.value)
        if not recorded:
            return LongJobStep(running.id, running.tenant, None, "fenced out")
        return LongJobStep(
            running.id, running.tenant, finished.state, "failed", attempt=running.attempt
        )

    def _stale(
        self, message: DispatchMessage, execution: Execution | None, task_token: str
    ) -> LongJobStep:
        """The attempt ended (cancelled, reaped, completed) before its hand-over arrived."""
        self._machine.fail(task_token, ATTEMPT_STALE, "the execution moved on before the delivery")
        if execution is None:
            return LongJobStep(message.execution_id, None, None, "unknown execution")
        return LongJobStep(execution.id, execution.tenant, execution.state, "stale")


def callback_delivery(execution: Execution) -> Execution:
    """The execution as its delivery is built: the headers that tell the target it must
    heartbeat and complete, and the short wait for its answer (it accepts, then works)."""
    target = execution.target
    if not isinstance(target, HttpTarget):
        return execution
    started = execution.started_at or execution.created_at
    headers = {
        **target.headers,
        CALLBACK_HEADER: "true",
        HEARTBEAT_HEADER: str(target.heartbeat_s),
        DEADLINE_HEADER: format_instant(started + timedelta(seconds=target.timeout_s)),
    }
    return replace(
        execution,
        target=replace(target, headers=headers, timeout_s=accept_timeout_s(target)),
    )
