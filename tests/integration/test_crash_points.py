"""Crash points: the process dies before each call of tick, dispatch and sweeper in turn.

For every scenario, a clean run numbers the calls (AWS and target) its handlers make; then, for
each N, a fresh deployment runs the same script with the process dying just before call N, and
fresh handlers resume, minute by minute, until nothing is left to do. After each:
- every due occurrence has exactly one execution record, and it ended (run, or recorded with a
  reason);
- every delivery the target saw for an occurrence carries that occurrence's execution id, each
  with a newer fencing token than the one before;
- successes started their dependents exactly once, dead executions were announced, and the
  tenant's concurrency slots are all given back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from cronwheel.domain import lifecycle
from cronwheel.domain.model import (
    Backoff,
    Concurrency,
    ExecutionState,
    HttpTarget,
    Priority,
    RetryPolicy,
    Trigger,
)
from cronwheel.services.jobs import JobRequest, JobService
from cronwheel.services.schedules import ScheduleService
from cronwheel.store.store import ClaimResult
from tests.integration.conftest import ACME, T0
from tests.integration.crash_world import (
    Fuse,
    ProcessDeath,
    World,
    crash_world,
    fresh_ids,
    records_by_occurrence,
)

URL = "http://127.0.0.1:9"
QUICK_RETRY = RetryPolicy(max_attempts=3, backoff=Backoff.FIXED, initial_s=10, max_s=10)


@dataclass
class Expected:
    """What the user should find once everything settled, by job or schedule."""

    succeeded: set[str] = field(default_factory=set)  # job ids
    dead: dict[str, tuple[str, ...]] = field(default_factory=dict)  # job id -> reasons
    schedules: dict[str, int] = field(default_factory=dict)  # schedule id -> occurrences
    dependents: dict[str, str] = field(default_factory=dict)  # downstream id -> upstream id


@dataclass
class Scenario:
    name: str
    setup: Callable[[World, Expected], None]
    script: list[tuple[float, str]]  # (seconds after T0, handler)

    def play(self, w: World) -> None:
        for seconds, handler in self.script:
            w.at(seconds)
            getattr(w, handler)()


# -- setups ---------------------------------------------------------------------------------


def _job(w: World, path: str, *, delay_s: int = 0, retry: RetryPolicy = QUICK_RETRY) -> str:
    submitted = JobService(w.rt.store, w.rt.queue, w.settings).submit(
        ACME,
        JobRequest(
            target=HttpTarget(url=f"{URL}/{path}"),
            payload={},
            retry=retry,
            priority=Priority.NORMAL,
            delay_s=delay_s,
        ),
        w.clock.now(),
    )
    return submitted.job.id


def _schedule(w: World, name: str, **fields: object) -> str:
    created = ScheduleService(w.rt.store, w.rt.queue, w.settings).create(
        ACME,
        {
            "name": name,
            "target": HttpTarget(url=f"{URL}/ok"),
            "retry": QUICK_RETRY,
            "concurrency": Concurrency.ALLOW,
            "misfire_grace_s": 3600,
            **fields,
        },
        w.clock.now(),
    )
    return created.id


def tick_fires_jobs_and_schedules(w: World, expected: Expected) -> None:
    """A job and a schedule occurrence beyond the lookahead, for the tick to fire; the
    schedule has a dependent."""
    expected.succeeded.add(_job(w, "ok", delay_s=100))
    upstream = _schedule(w, "up", rate="2 minutes", end_at=T0 + timedelta(seconds=130))
    downstream = _schedule(w, "down", after=upstream)
    expected.schedules[upstream] = 1
    expected.dependents[downstream] = upstream


def dispatch_retries_and_gives_up(w: World, expected: Expected) -> None:
    """Jobs due now: one fails once then succeeds, one fails until it is dead."""
    expected.succeeded.add(_job(w, "flaky"))
    poison = _job(w, "fail", retry=RetryPolicy(max_attempts=2, backoff=Backoff.FIXED, initial_s=10))
    # Its last attempt fails, or its worker dies before reporting (then the lease runs out)
    expected.dead[poison] = ("max_attempts_exhausted", "lease_expired")


def sweeper_recovers_lost_work(w: World, expected: Expected) -> None:
    """Two executions whose workers died (one with an attempt left, one without) and one
    whose message never reached the queue."""
    for path, retry, outcome in (
        ("ok", QUICK_RETRY, None),
        ("ok", RetryPolicy(max_attempts=1), "lease_expired"),
    ):
        job_id = _job(w, path, retry=retry)
        execution = w.rt.store.get_execution(_execution_of(w, job_id), consistent=True)
        assert execution is not None
        running = lifecycle.claim(execution, w.clock.now(), timedelta(seconds=60))
        claimed = w.rt.store.claim(
            running, expect_state=execution.state, expect_token=0, max_concurrency=100
        )
        assert claimed is ClaimResult.CLAIMED
        if outcome:
            expected.dead[job_id] = (outcome,)
        else:
            expected.succeeded.add(job_id)
    send = w.rt.queue.send
    w.rt.queue.send = lambda messages, now: list(messages)  # type: ignore[method-assign]
    expected.succeeded.add(_job(w, "ok"))
    w.rt.queue.send = send  # type: ignore[method-assign]


def _execution_of(w: World, job_id: str) -> str:
    job = w.rt.store.get_job(job_id)
    assert job is not None
    return job.execution_id


SCENARIOS = [
    Scenario(
        "tick",
        tick_fires_jobs_and_schedules,
        [(60, "tick"), (100, "dispatch"), (120, "dispatch"), (121, "dispatch"), (122, "sweep")],
    ),
    Scenario(
        "dispatch",
        dispatch_retries_and_gives_up,
        [(0, "dispatch"), (10, "dispatch"), (11, "sweep")],
    ),
    Scenario(
        "sweeper",
        sweeper_recovers_lost_work,
        [(130, "sweep"), (130, "dispatch"), (140, "dispatch"), (141, "sweep")],
    ),
]


# -- the checks ---------------------------------------------------------------------------------


def check_outcome(w: World, expected: Expected, crash: str) -> None:
    executions = w.executions()
    by_id = {e.id: e for e in executions}

    # One record per occurrence, each ended, nothing left for the sweeper
    for occurrence, ids in records_by_occurrence(executions).items():
        assert len(ids) == 1, f"{crash}: {occurrence} has records {ids}"
    assert w.unfinished() == [], crash
    assert w.marked() == [], crash

    # Jobs: the ones that should succeed did, the poison ones are dead with their reason
    jobs = {e.job_id: e for e in executions if e.job_id}
    assert set(jobs) == expected.succeeded | set(expected.dead), crash
    for job_id in expected.succeeded:
        assert jobs[job_id].state is ExecutionState.SUCCEEDED, (crash, jobs[job_id])
    for job_id, reasons in expected.dead.items():
        execution = jobs[job_id]
        assert execution.state is ExecutionState.DEAD, (crash, execution)
        assert (execution.reason or "").startswith(reasons), (crash, execution.reason)
        assert execution.attempt == execution.retry.max_attempts, (crash, execution)

    # Schedules: each occurrence ran (or was recorded with a reason); each success started
    # its dependents once, for the same occurrence
    for schedule_id, occurrences in expected.schedules.items():
        runs = [e for e in executions if e.schedule_id == schedule_id]
        assert len(runs) == occurrences, (crash, runs)
        for run in runs:
            assert run.state is ExecutionState.SUCCEEDED or run.reason, (crash, run)
    for downstream, upstream in expected.dependents.items():
        succeeded = sorted(
            e.scheduled_for
            for e in executions
            if e.schedule_id == upstream and e.state is ExecutionState.SUCCEEDED
        )
        dependents = [e for e in executions if e.schedule_id == downstream]
        assert sorted(e.scheduled_for for e in dependents) == succeeded, (crash, dependents)
        for dependent in dependents:
            assert dependent.trigger is Trigger.DEPENDENCY
            assert dependent.state is ExecutionState.SUCCEEDED, (crash, dependent)

    # The target: only known executions, each new attempt with a newer token, and a succeeded
    # execution's last delivery is the attempt that stands
    for execution_id in {d.execution_id for d in w.target.deliveries}:
        assert execution_id in by_id, f"{crash}: delivery for unknown {execution_id}"
        tokens = [d.fencing_token for d in w.target.calls_for(execution_id)]
        assert tokens == sorted(set(tokens)), (crash, execution_id, tokens)
        execution = by_id[execution_id]
        if execution.state is ExecutionState.SUCCEEDED:
            assert tokens[-1] == execution.fencing_token, (crash, execution_id, tokens)
    for execution in executions:
        if execution.state is ExecutionState.SUCCEEDED:
            assert w.target.calls_for(execution.id), f"{crash}: {execution.id} never delivered"

    # Every dead execution was announced (at least once), and nothing else was
    announced = {event["execution_id"] for event in w.dead_events()}
    dead = {e.id for e in executions if e.state is ExecutionState.DEAD}
    assert announced == dead, crash

    # And every concurrency slot is back
    assert w.rt.store.running_slots("acme") == 0, crash


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with crash_world(monkeypatch, Fuse()) as built:
        yield built


def _run(monkeypatch: pytest.MonkeyPatch, w: World, scenario: Scenario, kill_at: int | None) -> str:
    """Play the scenario on a fresh deployment, dying before call `kill_at`, recover, check.
    Returns the name of the call the process died before."""
    w.reset()
    fresh_ids(monkeypatch)
    expected = Expected()
    scenario.setup(w, expected)
    fuse = w.fuse
    fuse.kill_at, fuse.dead, fuse.calls, fuse.died_before = kill_at, False, [], None
    fuse.armed = True
    with contextlib.suppress(ProcessDeath):
        scenario.play(w)
    fuse.armed = False
    crash = f"{scenario.name}: died before call {kill_at} ({fuse.died_before})"
    w.recover()
    check_outcome(w, expected, crash)
    return fuse.died_before or ""


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_crash_point_recovers(
    monkeypatch: pytest.MonkeyPatch, world: World, scenario: Scenario
) -> None:
    # Given a clean run of the scenario, which numbers its calls
    _run(monkeypatch, world, scenario, kill_at=None)
    calls = list(world.fuse.calls)
    assert calls, "the scenario made no calls"

    # When the process dies before each one of them in turn, and fresh handlers resume
    # Then each time the outcome is the clean run's (checked inside), and the runs died
    # exactly before each call of the clean run
    died_before = [_run(monkeypatch, world, scenario, kill_at=n) for n in range(1, len(calls) + 1)]
    assert died_before == calls
