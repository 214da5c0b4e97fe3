"""Cost of one next-fire computation: cronwheel's engine vs raw croniter vs cronsim.

Run: .venv/bin/python bench/cron.py [--instants N]

Every engine answers the same questions: for each (expression, zone) pair and each of N instants
spread over 2024-2026, "when is the first fire strictly after this instant?".

* cronwheel: the schedule compiled once (compile_recurrence is cached), then next_after(instant).
  A second column also pays the cached compile_recurrence lookup on every call, as a tick that
  keeps no per-schedule state does.
* croniter: croniter(expr, start).get_next(datetime), a new croniter per computation, which is
  how a stateless tick would have to use it.
* cronsim: next(CronSim(expr, start)), likewise built per computation.

Prints microseconds per computation (best of a few repeats) and the ratios to cronwheel, and
counts the answers where croniter or cronsim disagree with cronwheel. Random instants rarely land
near a DST transition, where they differ (croniter fires a repeated fixed time twice; cronsim
skips some times on Lord Howe's 30-minute shift days).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "common" / "python"))

from croniter import croniter
from cronsim import CronSim

from cronwheel.domain.cron import compile_recurrence

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]
EXPRESSIONS = [
    ("fixed daily", "30 2 * * *"),
    ("fixed list", "0 9,13,17 * * *"),
    ("every minute", "* * * * *"),
    ("stepped */15", "*/15 * * * *"),
    ("hourly", "0 * * * *"),
    ("stepped hours", "5 */6 * * *"),
    ("ranges", "0-30/10 8-18 * * *"),
    ("weekdays", "0 9 * * MON-FRI"),
    ("dom or dow", "0 0 13 * FRI"),
    ("monthly", "0 0 1 * *"),
    ("quarterly", "15 3 1 1,4,7,10 *"),
    ("leap day", "0 12 29 2 *"),
]
REPEATS = 3


def per_call_us(compute: Callable[[datetime], object], instants: list[datetime]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        began = time.perf_counter()
        for instant in instants:
            compute(instant)
        best = min(best, time.perf_counter() - began)
    return best / len(instants) * 1e6


def next_with_cached_compile(expression: str, zone: str, instant: datetime) -> datetime | None:
    return compile_recurrence(cron=expression, timezone=zone).next_after(instant)


def next_with_croniter(expression: str, instant: datetime) -> datetime:
    fire: datetime = croniter(expression, instant).get_next(datetime)
    return fire


def next_with_cronsim(expression: str, instant: datetime) -> datetime:
    return next(CronSim(expression, instant))


def stamp(value: object) -> float | None:
    return value.timestamp() if isinstance(value, datetime) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instants", type=int, default=300, help="instants per expression/zone")
    args = parser.parse_args()
    rng = random.Random(20260329)
    low = int(datetime(2024, 1, 1, tzinfo=UTC).timestamp())
    high = int(datetime(2027, 1, 1, tzinfo=UTC).timestamp())

    print(f"next-fire cost in microseconds per computation ({args.instants} instants per row)")
    header = (
        f"{'expression':<16} {'zone':<20} {'ours':>6} {'ours+c':>6} {'croniter':>8} "
        f"{'cronsim':>8} {'cri/ours':>8} {'csim/ours':>9}"
    )
    print(header)
    print("-" * len(header))
    totals = {"ours": 0.0, "ours_compile": 0.0, "croniter": 0.0, "cronsim": 0.0}
    disagreements = {"croniter": 0, "cronsim": 0}
    answers = 0
    for zone_name in ZONES:
        zone = ZoneInfo(zone_name)
        for label, expression in EXPRESSIONS:
            instants = [
                datetime.fromtimestamp(rng.randrange(low, high), UTC).astimezone(zone)
                for _ in range(args.instants)
            ]
            recurrence = compile_recurrence(cron=expression, timezone=zone_name)

            ours = recurrence.next_after
            ours_compile = partial(next_with_cached_compile, expression, zone_name)
            with_croniter = partial(next_with_croniter, expression)
            with_cronsim = partial(next_with_cronsim, expression)
            row = {
                "ours": per_call_us(ours, instants),
                "ours_compile": per_call_us(ours_compile, instants),
                "croniter": per_call_us(with_croniter, instants),
                "cronsim": per_call_us(with_cronsim, instants),
            }
            for key, value in row.items():
                totals[key] += value
            for instant in instants:
                # Compare POSIX timestamps: `==` between zones is always False for a time in a
                # repeated hour (PEP 495), even for the same instant.
                expected = stamp(recurrence.next_after(instant))
                answers += 1
                if stamp(with_croniter(instant)) != expected:
                    disagreements["croniter"] += 1
                if stamp(with_cronsim(instant)) != expected:
                    disagreements["cronsim"] += 1
            print(
                f"{label:<16} {zone_name:<20} {row['ours']:>6.2f} {row['ours_compile']:>6.2f} "
                f"{row['croniter']:>8.2f} {row['cronsim']:>8.2f} "
                f"{row['croniter'] / row['ours']:>7.1f}x {row['cronsim'] / row['ours']:>8.1f}x"
            )
    rows = len(ZONES) * len(EXPRESSIONS)
    mean = {key: value / rows for key, value in totals.items()}
    print("-" * len(header))
    print(
        f"{'mean of rows':<37} {mean['ours']:>6.2f} {mean['ours_compile']:>6.2f} "
        f"{mean['croniter']:>8.2f} {mean['cronsim']:>8.2f} "
        f"{mean['croniter'] / mean['ours']:>7.1f}x {mean['cronsim'] / mean['ours']:>8.1f}x"
    )
    print(
        f"ratios: croniter/ours = {mean['croniter'] / mean['ours']:.1f}x, "
        f"cronsim/ours = {mean['cronsim'] / mean['ours']:.1f}x "
        f"(with the cached compile on every call: {mean['croniter'] / mean['ours_compile']:.1f}x, "
        f"{mean['cronsim'] / mean['ours_compile']:.1f}x)"
    )
    print(
        f"answers differing from cronwheel out of {answers}: "
        f"croniter {disagreements['croniter']}, cronsim {disagreements['cronsim']}"
    )


if __name__ == "__main__":
    main()
