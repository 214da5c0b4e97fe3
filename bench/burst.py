"""Burst benchmark: N one-off jobs due at the same second on the local stack.

Prints fire lag (target called minus due) p50/p99/max, throughput, duplicates and AWS requests
per execution. Usage: python bench/burst.py --jobs 1000
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

import botocore.endpoint  # noqa: E402

from cronwheel.domain.instants import format_instant  # noqa: E402
from cronwheel_local.config import parse_config  # noqa: E402
from cronwheel_local.stack import LocalStack  # noqa: E402
from tests.support.api import Api  # noqa: E402
from tests.support.target import RecordingTarget, recording_target  # noqa: E402

KEY = "bench-operator-key"
CONFIG = {
    "shards": 4,
    "tick_interval_s": 1,
    "tenants": [{"id": "bench", "api_keys": [{"key": KEY, "role": "operator"}]}],
}


class RequestCounter:
    """Counts every AWS API request made in this process, by operation."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._original = botocore.endpoint.Endpoint.make_request

    def __enter__(self) -> RequestCounter:
        counter = self

        def counting(endpoint: Any, operation_model: Any, request_dict: Any) -> Any:
            with counter._lock:
                counter.counts[
                    f"{operation_model.service_model.service_name}:{operation_model.name}"
                ] += 1
            return counter._original(endpoint, operation_model, request_dict)

        botocore.endpoint.Endpoint.make_request = counting  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        botocore.endpoint.Endpoint.make_request = self._original  # type: ignore[method-assign]


@dataclass
class BurstResult:
    jobs: int
    executions_called: int
    calls: int
    lags_s: list[float]
    throughput_per_s: float
    requests: Counter[str]
    submit_s: float
    submitted_states: Counter[str]

    @property
    def duplicates(self) -> int:
        return self.calls - self.executions_called

    def percentile(self, p: float) -> float:
        ordered = sorted(self.lags_s)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def run_burst(
    api: Api,
    target: RecordingTarget,
    jobs: int,
    lead_s: float,
    timeout_s: float,
    submitters: int = 8,
) -> BurstResult:
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=lead_s)
    body = {
        "run_at": format_instant(due),
        "target": {"type": "http", "url": f"{target.base_url}/ok"},
    }
    before = len(target.calls)
    with RequestCounter() as counter:
        submit_started = time.monotonic()
        with ThreadPoolExecutor(max_workers=submitters) as pool:
            answers = list(pool.map(lambda _: api.post("/v1/jobs", body), range(jobs)))
        submit_s = time.monotonic() - submit_started
        failed = [a for a in answers if a[0] != 201]
        if failed:
            raise RuntimeError(f"{len(failed)} submissions failed, e.g. {failed[0]}")
        ids = {job["execution_id"] for _, job in answers}
        deadline = time.monotonic() + lead_s + timeout_s
        while time.monotonic() < deadline:
            called = {c.headers.get("X-Cronwheel-Execution-Id") for c in target.calls[before:]}
            if ids <= called:
                break
            time.sleep(0.1)
        time.sleep(0.5)  # let the last results be recorded before counting requests
    calls = [c for c in target.calls[before:] if c.headers.get("X-Cronwheel-Execution-Id") in ids]
    first_by_execution: dict[str, float] = {}
    for call in calls:
        key = call.headers["X-Cronwheel-Execution-Id"]
        first_by_execution[key] = min(
            first_by_execution.get(key, call.received_at), call.received_at
        )
    lags = [t - due.timestamp() for t in first_by_execution.values()]
    span = max(first_by_execution.values()) - due.timestamp() if lags else 0.0
    return BurstResult(
        jobs=jobs,
        executions_called=len(first_by_execution),
        calls=len(calls),
        lags_s=lags,
        throughput_per_s=len(first_by_execution) / span if span > 0 else float("nan"),
        requests=counter.counts,
        submit_s=submit_s,
        submitted_states=Counter(job["state"] for _, job in answers),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--lead-s", type=float, default=None, help="seconds from submit to due")
    parser.add_argument("--dispatchers", type=int, default=4)
    args = parser.parse_args()
    lead_s = args.lead_s if args.lead_s is not None else max(5.0, args.jobs / 15)
    config = parse_config({**CONFIG, "dispatchers": args.dispatchers})
    with LocalStack(config, port=0) as stack, recording_target() as target:
        result = run_burst(Api(stack.url, KEY), target, args.jobs, lead_s, timeout_s=600)
    total_requests = sum(result.requests.values())
    print(
        f"burst: {result.jobs} jobs due at the same second, {args.dispatchers} dispatchers, local stack"
    )
    print(
        f"  executions run        {result.executions_called} / {result.jobs}  (duplicates: {result.duplicates})"
    )
    print(
        f"  submitting took       {result.submit_s:8.1f} s  (states: {dict(result.submitted_states)})"
    )
    print(f"  fire lag p50          {result.percentile(50) * 1000:8.0f} ms")
    print(f"  fire lag p99          {result.percentile(99) * 1000:8.0f} ms")
    print(f"  fire lag max          {max(result.lags_s) * 1000:8.0f} ms")
    print(
        f"  throughput            {result.throughput_per_s:8.1f} executions/s after the due second"
    )
    print(
        f"  AWS requests / exec   {total_requests / result.jobs:8.2f}  (submit + fire + run + record)"
    )
    for operation, count in result.requests.most_common():
        print(f"    {operation:40s} {count / result.jobs:6.2f}")


if __name__ == "__main__":
    main()
