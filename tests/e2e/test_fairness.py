"""Fairness: a quiet tenant's job is not queued behind a noisy tenant's burst."""

from __future__ import annotations

from bench.fairness import run_fairness
from tests.support.api import Api
from tests.support.target import RecordingTarget

NOISY_JOBS = 200


def test_a_quiet_tenants_job_runs_before_a_noisy_tenants_burst_has_drained(
    api: Api, target: RecordingTarget
) -> None:
    # When 200 jobs of one tenant fall due at once, and another tenant then submits one
    result = run_fairness(
        api.as_key("noisyco-operator-key"),
        api.as_key("quietco-operator-key"),
        target,
        NOISY_JOBS,
        lead_s=NOISY_JOBS / 10,
        timeout_s=180,
    )

    # Then the quiet tenant's job ran while most of the burst was still waiting its turn
    # (first come, first served would have run it after all of them)
    assert result.noisy_waiting >= NOISY_JOBS // 2, result
    # And the whole burst still ran: waiting is not dropping
    assert result.noisy_jobs == NOISY_JOBS
