"""1000 one-off jobs due at the same second on the local stack each run exactly once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.burst import CONFIG, KEY, run_burst
from cronwheel_local.config import parse_config
from cronwheel_local.stack import LocalStack
from tests.support.api import Api, execution_states
from tests.support.target import recording_target, wait_for

JOBS = 1000


@pytest.fixture(scope="module")
def fresh_stack() -> Iterator[LocalStack]:
    with LocalStack(parse_config(CONFIG), port=0) as stack:
        yield stack


def test_a_thousand_jobs_due_at_one_second_each_run_exactly_once(fresh_stack: LocalStack) -> None:
    api = Api(fresh_stack.url, KEY)
    with recording_target() as target:
        # When 1000 jobs due at the same second are submitted and run
        result = run_burst(api, target, JOBS, lead_s=JOBS / 40, timeout_s=600)

    # Then every one was called, none twice
    assert result.executions_called == JOBS
    assert result.duplicates == 0
    # And none before its due second
    assert min(result.lags_s) >= 0
    # And each reads succeeded with a single attempt, once its result is written
    assert wait_for(
        lambda: execution_states(api) == {"succeeded/1": JOBS}, timeout_s=60, interval_s=1
    )
