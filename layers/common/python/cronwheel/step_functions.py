"""The long-job state machine as the services see it: start an attempt, report on its task."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from cronwheel import aws_clients
from cronwheel.long_job_machine import machine_execution_name
from cronwheel.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

logger = Logger(child=True)

# The task is already over: the state machine timed it out, or it ended another way. The
# execution record is the truth; the machine's own catch path has handled its side.
_TASK_OVER = {"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"}
_CAUSE_LIMIT = 32_768  # Step Functions' cap on a task failure's cause


class LongJobsNotConfigured(RuntimeError):
    """The deployment has no long-job state machine (no ARN in the environment)."""


class StepFunctionsMachine:
    """Step Functions calls for the long-job state machine; the client is made on first use."""

    def __init__(self, settings: Settings, client: SFNClient | None = None) -> None:
        self._settings = settings
        self._client = client

    @property
    def configured(self) -> bool:
        return self._settings.long_job_state_machine_arn is not None

    def _sfn(self) -> SFNClient:
        if self._client is None:
            self._client = aws_clients.client(
                "stepfunctions", self._settings.region, self._settings.endpoint_url
            )
        return self._client

    def start(self, execution_id: str, fencing_token: int, machine_input: dict[str, Any]) -> str:
        """Start the machine for one attempt; idempotent per attempt (the name is the execution
        id and fencing token). Returns the Step Functions execution ARN."""
        arn = self._settings.long_job_state_machine_arn
        if arn is None:
            raise LongJobsNotConfigured("no long-job state machine is configured")
        name = machine_execution_name(execution_id, fencing_token)
        body = json.dumps(machine_input, sort_keys=True)
        try:
            started = self._sfn().start_execution(stateMachineArn=arn, name=name, input=body)
        except ClientError as error:
            if _code(error) != "ExecutionAlreadyExists":
                raise
            # Started before (a retried message after a crash): the same attempt is running or
            # has run; its own timeout or result decides it.
            return f"{arn.replace(':stateMachine:', ':execution:')}:{name}"
        return str(started["executionArn"])

    def heartbeat(self, task_token: str) -> None:
        self._report(lambda: self._sfn().send_task_heartbeat(taskToken=task_token))

    def succeed(self, task_token: str, output: dict[str, Any]) -> None:
        body = json.dumps(output)
        self._report(lambda: self._sfn().send_task_success(taskToken=task_token, output=body))

    def fail(self, task_token: str, error: str, cause: str) -> None:
        self._report(
            lambda: self._sfn().send_task_failure(
                taskToken=task_token, error=error, cause=cause[:_CAUSE_LIMIT]
            )
        )

    @staticmethod
    def _report(call: Any) -> None:
        """Tell the machine; never fail the caller for it. The execution record, written first
        and conditionally, is the truth: a machine that missed a report times out, and its
        conditional lease expiry then finds the attempt already ended (or, for a missed
        heartbeat, the sweeper retries the attempt, as for any lost lease)."""
        try:
            call()
        except ClientError as error:
            if _code(error) in _TASK_OVER:
                logger.info("long-job task already over", extra={"sfn_error": _code(error)})
                return
            logger.warning("long-job task report failed", extra={"sfn_error": _code(error)})
        except BotoCoreError as error:
            logger.warning("long-job task report failed", extra={"sfn_error": str(error)})


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


_lock = threading.Lock()
_machines: dict[tuple[str | None, str, str | None], StepFunctionsMachine] = {}


def machine_for(settings: Settings) -> StepFunctionsMachine:
    """The process's long-job machine for these settings (one client per process)."""
    key = (settings.long_job_state_machine_arn, settings.region, settings.endpoint_url)
    with _lock:
        if key not in _machines:
            _machines[key] = StepFunctionsMachine(settings)
        return _machines[key]
