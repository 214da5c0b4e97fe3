"""Which jobs are long, and how long a long job's worker lease runs. Pure."""

from __future__ import annotations

from datetime import datetime, timedelta

from cronwheel.domain.model import Execution, HttpTarget, Target

# The longest attempt one dispatcher invocation holds inline (Lambda stops at 900 s; the rest
# is the dispatcher's own work). Anything longer runs under the long-job state machine.
MAX_INLINE_TIMEOUT_S = 840
# The longest attempt cronwheel runs at all (API.md: `timeout_s` 1-86400).
MAX_TIMEOUT_S = 86_400
# A long job's target heartbeats at least this often unless its target says otherwise.
DEFAULT_HEARTBEAT_S = 60
MAX_HEARTBEAT_S = 3600
# A long job's target accepts (answers 2xx) at once and works afterwards; the state machine's
# heartbeat clock is already running while it answers.
MAX_ACCEPT_S = 30


def is_long_job(target: Target) -> bool:
    """A callback target, or an attempt longer than one dispatcher invocation can hold."""
    return isinstance(target, HttpTarget) and (
        target.callback or target.timeout_s > MAX_INLINE_TIMEOUT_S
    )


def heartbeat_s(target: Target) -> int:
    return target.heartbeat_s if isinstance(target, HttpTarget) else DEFAULT_HEARTBEAT_S


def accept_timeout_s(target: Target) -> int:
    """How long the dispatcher waits for a long job's target to accept the delivery."""
    if not isinstance(target, HttpTarget):
        return MAX_ACCEPT_S
    return min(target.timeout_s, target.heartbeat_s, MAX_ACCEPT_S)


def lease_grace_s(target: Target, worker_lease_slack_s: int) -> int:
    """Time for a heartbeat to travel, on top of the heartbeat interval: the stage's worker
    slack, but never more than the interval itself (a 3 s heartbeat must not get a 30 s lease
    extension)."""
    return min(heartbeat_s(target), worker_lease_slack_s)


def heartbeat_lease_end(running: Execution, now: datetime, worker_lease_slack_s: int) -> datetime:
    """Where a heartbeat (or the target's acceptance) moves a long attempt's lease: one
    heartbeat interval plus grace from now, but never past the attempt's timeout (plus grace),
    so a target that heartbeats forever still times out."""
    grace = timedelta(seconds=lease_grace_s(running.target, worker_lease_slack_s))
    extended = now + timedelta(seconds=heartbeat_s(running.target)) + grace
    if running.started_at is None or not isinstance(running.target, HttpTarget):
        return extended
    deadline = running.started_at + timedelta(seconds=running.target.timeout_s) + grace
    return min(extended, deadline)


def delivery_lease_end(
    running: Execution, now: datetime, delivery_grace_s: int, worker_lease_slack_s: int
) -> datetime:
    """The lease of a long attempt between the start of its state machine and the target's
    answer: long enough for the hand-over message to be delivered (the delivery grace) and the
    target to answer; the state machine's own heartbeat timeout usually ends it sooner."""
    return heartbeat_lease_end(running, now, worker_lease_slack_s) + timedelta(
        seconds=delivery_grace_s
    )
