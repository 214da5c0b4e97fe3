"""Fairness benchmark: a noisy tenant floods, a quiet tenant submits one job right after.

Tenant A submits N jobs that all fall due at one second; just after it, tenant B submits one
job due now. Prints how long B's job waited from its submission to its target call, and how
many of A's jobs were still waiting then.
Usage: python bench/fairness.py --jobs 5000
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from cronwheel.domain.instants import format_instant  # noqa: E402
from cronwheel_local.config import parse_config  # noqa: E402
from cronwheel_local.stack import LocalStack  # noqa: E402
from tests.support.api import Api  # noqa: E402
from tests.support.target import RecordingTarget, recording_target, wait_for  # noqa: E402

NOISY_KEY = "noisy-operator-key"
QUIET_KEY = "quiet-operator-key"
CONFIG = {
    "shards": 4,
    "tick_interval_s": 1,
    "tenants": [
        {"id": "noisy", "api_keys": [{"key": NOISY_KEY, "role": "operator"}]},
        {"id": "quiet", "api_keys": [{"key": QUIET_KEY, "role": "operator"}]},
    ],
}


@dataclass(frozen=True)
class FairnessResult:
    noisy_jobs: int
    quiet_wait_s: float  # quiet job: submitted -> its target called
    noisy_waiting: int  # noisy jobs not yet called when the quiet job was called
    noisy_drain_s: float  # the noisy jobs' due second -> last noisy call
    submit_s: float


def _job(target: RecordingTarget, run_at: datetime | None = None) -> dict[str, object]:
    body: dict[str, object] = {"target": {"type": "http", "url": f"{target.base_url}/ok"}}
    if run_at is not None:
        body["run_at"] = format_instant(run_at)
    return body


def run_fairness(
    noisy: Api,
    quiet: Api,
    target: RecordingTarget,
    jobs: int,
    lead_s: float,
    timeout_s: float = 900,
) -> FairnessResult:
    """The noisy tenant's jobs all fall due at one second, `lead_s` from now (time enough to
    submit them); just after that second the quiet tenant submits one job due now."""
    started = time.time()
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=lead_s)
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: noisy.post("/v1/jobs", _job(target, due)), range(jobs)))
    failed = [a for a in answers if a[0] != 201]
    if failed:
        raise RuntimeError(f"{len(failed)} noisy submissions failed, e.g. {failed[0]}")
    if datetime.now(UTC) > due:
        raise RuntimeError(f"submitting took longer than the lead of {lead_s} s; raise it")
    noisy_ids = {job["execution_id"] for _, job in answers}

    time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 0.5)
    submitted_at = time.time()
    status, quiet_job = quiet.post("/v1/jobs", _job(target))
    if status != 201:
        raise RuntimeError(f"quiet submission failed: {status} {quiet_job}")
    quiet_call = wait_for(
        lambda: target.calls_for(quiet_job["execution_id"]), timeout_s=timeout_s, interval_s=0.02
    )[0]

    def called(ids: set[str]) -> dict[str, float]:
        return {
            c.headers["X-Cronwheel-Execution-Id"]: c.received_at
            for c in list(target.calls)
            if c.headers.get("X-Cronwheel-Execution-Id") in ids
        }

    wait_for(lambda: len(called(noisy_ids)) == jobs, timeout_s=timeout_s, interval_s=0.5)
    noisy_calls = called(noisy_ids)
    return FairnessResult(
        noisy_jobs=jobs,
        quiet_wait_s=quiet_call.received_at - submitted_at,
        noisy_waiting=sum(1 for t in noisy_calls.values() if t > quiet_call.received_at),
        noisy_drain_s=max(noisy_calls.values()) - due.timestamp(),
        submit_s=submitted_at - started,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--lead-s", type=float, default=None, help="seconds from start to due")
    args = parser.parse_args()
    lead_s = args.lead_s if args.lead_s is not None else max(10.0, args.jobs / 30)
    with LocalStack(parse_config(CONFIG), port=0) as stack, recording_target() as target:
        result = run_fairness(
            Api(stack.url, NOISY_KEY), Api(stack.url, QUIET_KEY), target, args.jobs, lead_s
        )
    print(
        f"fairness: tenant A's {result.noisy_jobs} jobs fall due at one second "
        f"(submitted in {result.submit_s:.0f} s); just after it tenant B submits one job"
    )
    print(f"  B's job started after      {result.quiet_wait_s * 1000:8.0f} ms")
    print(f"  A's jobs still waiting     {result.noisy_waiting:8d}  (then)")
    print(f"  A's burst drained after    {result.noisy_drain_s:8.1f} s  (from its due second)")


if __name__ == "__main__":
    main()
