"""AWS throttling 30% of the firing path's DynamoDB and SQS requests loses and doubles nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.burst import CONFIG, KEY, run_burst
from cronwheel_local.config import parse_config
from cronwheel_local.faults import Throttling
from cronwheel_local.stack import LocalStack
from tests.support.api import Api, execution_states
from tests.support.target import recording_target, wait_for

JOBS = 500


@pytest.fixture(scope="module")
def throttled_stack() -> Iterator[LocalStack]:
    # Retries back off (sleeping, not holding the emulator), so more dispatchers keep it busy.
    config = parse_config({**CONFIG, "dispatchers": 16})
    with LocalStack(config, port=0, faults=Throttling(rate=0.3)) as stack:
        yield stack


def test_a_burst_under_30_percent_throttling_runs_every_job_once(
    throttled_stack: LocalStack,
) -> None:
    # A request whose calls are throttled many times in a row backs off for longer than a
    # client's usual 30 s (botocore waits up to 20 s between attempts).
    api = Api(throttled_stack.url, KEY, timeout_s=180)
    with recording_target() as target:
        # When 500 jobs due at the same second run while AWS throttles 30% of requests
        # (more clients at once: each request spends most of its time backing off)
        result = run_burst(api, target, JOBS, lead_s=JOBS / 15, timeout_s=600, submitters=32)

    # Then the throttling really happened, on a large share of requests
    faults = throttled_stack.faults
    assert faults is not None
    assert faults.throttled > 1000
    assert 0.25 < faults.throttled / (faults.throttled + faults.passed) < 0.35
    # And every job was called, none twice
    assert result.executions_called == JOBS
    assert result.duplicates == 0
    # And each execution reads succeeded after a single attempt, once its result is written
    assert wait_for(
        lambda: execution_states(api) == {"succeeded/1": JOBS}, timeout_s=120, interval_s=2
    )
