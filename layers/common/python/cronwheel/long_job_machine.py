"""The long-job state machine, defined once for the CDK and the local stack.

One Standard execution drives one attempt of a long (or callback) job with the callback
pattern: it hands the dispatcher a task token through the dispatch queue and waits, with
`HeartbeatSeconds` and `TimeoutSeconds` taken from its input, until the API reports the
target's heartbeats and result (`SendTaskHeartbeat`, `SendTaskSuccess`/`SendTaskFailure`).

When the wait ends without a result (heartbeat lost, timeout, the task failed), the machine
expires the attempt's worker lease with a DynamoDB task, conditional on the execution still
running that attempt (state and fencing token). The sweeper then reaps it exactly as it reaps
a short job whose worker died: a retry with a new fencing token, or `dead`. The machine never
writes a result itself, so retries, backoff and history stay in one place (the services).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from cronwheel.domain.instants import format_instant

# The resource the dispatcher hands over: SQS with the callback pattern.
SEND_AND_WAIT = "arn:aws:states:::sqs:sendMessage.waitForTaskToken"
UPDATE_ITEM = "arn:aws:states:::dynamodb:updateItem"

# Written as the lease's end when the machine gives up on an attempt. The sweep index
# compares it as a string, so it has the store's instant format (PynamoDB's UTC format):
# the epoch sorts before every real instant, which makes the lease expired at once.
EXPIRED_INSTANT = "1970-01-01T00:00:00.000000+0000"

# Errors the services send with SendTaskFailure once they have recorded the attempt.
ATTEMPT_FAILED = "cronwheel.AttemptFailed"  # the target refused the call or reported failure
ATTEMPT_STALE = "cronwheel.AttemptStale"  # the execution had moved on before delivery

WAIT_STATE = "WaitForTarget"
EXPIRE_STATE = "ExpireLease"


def long_job_definition(*, dispatch_queue_url: str, executions_table: str) -> dict[str, Any]:
    """The Amazon States Language document (JSONPath) of the long-job state machine."""
    return {
        "Comment": "cronwheel long job: one attempt, delivered by the dispatcher, completed "
        "by the target through the API (callback pattern)",
        "StartAt": WAIT_STATE,
        "States": {
            WAIT_STATE: {
                "Type": "Task",
                "Resource": SEND_AND_WAIT,
                "Parameters": {
                    "QueueUrl": dispatch_queue_url,
                    "MessageBody": {
                        "execution_id.$": "$.execution_id",
                        "token.$": "$.token",
                        "due_at.$": "$.due_at",
                        "task_token.$": "$$.Task.Token",
                    },
                },
                "HeartbeatSecondsPath": "$.heartbeat_s",
                "TimeoutSecondsPath": "$.timeout_s",
                "ResultPath": "$.result",
                "Catch": [
                    {
                        # Already recorded by the service that reported it.
                        "ErrorEquals": [ATTEMPT_FAILED, ATTEMPT_STALE],
                        "ResultPath": "$.error",
                        "Next": "AttemptFailed",
                    },
                    {
                        "ErrorEquals": [
                            "States.Timeout",
                            "States.HeartbeatTimeout",
                            "States.TaskFailed",
                        ],
                        "ResultPath": "$.error",
                        "Next": EXPIRE_STATE,
                    },
                ],
                "Next": "AttemptSucceeded",
            },
            EXPIRE_STATE: {
                "Type": "Task",
                "Resource": UPDATE_ITEM,
                "Parameters": {
                    "TableName": executions_table,
                    "Key": {"id": {"S.$": "$.execution_id"}},
                    "UpdateExpression": "SET lease_expires_at = :expired, sweep_at = :expired",
                    "ConditionExpression": "#state = :running AND fencing_token = :token",
                    "ExpressionAttributeNames": {"#state": "state"},
                    "ExpressionAttributeValues": {
                        ":expired": {"S": EXPIRED_INSTANT},
                        ":running": {"S": "running"},
                        ":token": {"N.$": "States.Format('{}', $.token)"},
                    },
                },
                "ResultPath": None,
                "Catch": [
                    {
                        # The attempt ended (or a newer one started) meanwhile: nothing to do.
                        "ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"],
                        "ResultPath": "$.expire_error",
                        "Next": "AttemptAlreadyEnded",
                    }
                ],
                "Next": "AttemptLost",
            },
            "AttemptLost": {
                "Type": "Fail",
                "Error": "cronwheel.AttemptLost",
                "Cause": "no heartbeat or result in time; the sweeper retries the execution "
                "or ends it dead",
            },
            "AttemptFailed": {
                "Type": "Fail",
                "Error": ATTEMPT_FAILED,
                "Cause": "the attempt failed and was recorded",
            },
            "AttemptAlreadyEnded": {"Type": "Succeed"},
            "AttemptSucceeded": {"Type": "Succeed"},
        },
    }


def long_job_definition_json(*, dispatch_queue_url: str, executions_table: str) -> str:
    return json.dumps(
        long_job_definition(
            dispatch_queue_url=dispatch_queue_url, executions_table=executions_table
        ),
        indent=2,
    )


def machine_execution_name(execution_id: str, fencing_token: int) -> str:
    """One state machine execution per attempt: starting it twice starts it once."""
    return f"{execution_id}-{fencing_token}"


def machine_input(
    *,
    execution_id: str,
    fencing_token: int,
    due_at: datetime,
    heartbeat_s: int,
    timeout_s: int,
) -> dict[str, Any]:
    """The execution input. Step Functions wants the heartbeat strictly below the timeout."""
    timeout = max(timeout_s, 2)
    return {
        "execution_id": execution_id,
        "token": fencing_token,
        "due_at": format_instant(due_at),
        "heartbeat_s": max(1, min(heartbeat_s, timeout - 1)),
        "timeout_s": timeout,
    }
