"""Cron expression syntax, Vixie day matching and Jenkins `H` hashing."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice

import pytest
from cronsim import CronSim, CronSimError
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cronwheel.domain.cron import compile_recurrence

AFTER = datetime(2025, 1, 1, tzinfo=UTC)


def z(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def first_fires(
    cron: str, count: int = 8, *, seed: str = "", after: datetime = AFTER
) -> list[datetime]:
    return list(islice(compile_recurrence(cron=cron, seed=seed).iter_after(after), count))


EQUIVALENT = {
    "month_names_case_insensitive": ("0 9 * jan-Mar *", "0 9 * 1-3 *"),
    "day_names_case_insensitive": ("0 9 * * mon-FRI", "0 9 * * 1-5"),
    "seven_is_sunday": ("0 0 * * 7", "0 0 * * 0"),
    "range_ending_on_sunday": ("0 0 * * FRI-SUN", "0 0 * * 5,6,0"),
    "range_through_seven": ("0 0 * * 5-7", "0 0 * * 0,5,6"),
    "value_with_step_runs_to_field_end": ("5/20 * * * *", "5,25,45 * * * *"),
    "range_with_step": ("10-40/15 * * * *", "10,25,40 * * * *"),
    "step_wider_than_range_keeps_start": ("0-10/20 * * * *", "0 * * * *"),
    "one_value_range_with_step": ("5-5/3 * * * *", "5 * * * *"),
    "macro_hourly": ("@hourly", "0 * * * *"),
    "macro_daily": ("@daily", "0 0 * * *"),
    "macro_midnight": ("@MIDNIGHT", "0 0 * * *"),
    "macro_weekly": ("@weekly", "0 0 * * 0"),
    "macro_monthly": ("@monthly", "0 0 1 * *"),
    "macro_yearly": ("@yearly", "0 0 1 1 *"),
    "macro_annually": ("@annually", "0 0 1 1 *"),
    "extra_whitespace": ("  0   9 *  * 1 ", "0 9 * * 1"),
}


@pytest.mark.parametrize(("cron", "same_as"), EQUIVALENT.values(), ids=EQUIVALENT.keys())
def test_equivalent_spellings_fire_identically(cron: str, same_as: str) -> None:
    # Given two spellings of one schedule, When listing fires, Then they agree
    assert first_fires(cron) == first_fires(same_as)


DAY_MATCHING = {
    # Vixie: both day fields restricted -> a day matching either fires.
    "dom_or_dow_when_both_restricted": (
        "0 0 13 * FRI",
        ["2025-01-03", "2025-01-10", "2025-01-13", "2025-01-17", "2025-01-24"],
    ),
    # A day field starting with `*` (even `*/2`) is a wildcard: both must match.
    "dom_and_dow_when_dom_starts_with_star": (
        "0 0 */2 * MON",
        ["2025-01-13", "2025-01-27", "2025-02-03", "2025-02-17", "2025-03-03"],
    ),
    "leap_day_only": (
        "0 0 29 2 *",
        ["2028-02-29", "2032-02-29", "2036-02-29", "2040-02-29", "2044-02-29"],
    ),
    "thirty_first_skips_short_months": (
        "0 0 31 * *",
        ["2025-01-31", "2025-03-31", "2025-05-31", "2025-07-31", "2025-08-31"],
    ),
}


@pytest.mark.parametrize(("cron", "days"), DAY_MATCHING.values(), ids=DAY_MATCHING.keys())
def test_day_of_month_and_day_of_week(cron: str, days: list[str]) -> None:
    assert first_fires(cron, len(days)) == [z(f"{day}T00:00") for day in days]


# ---------------------------------------------------------------------------------------------
# Against cronsim (Vixie semantics) in UTC, where no DST rule applies
# ---------------------------------------------------------------------------------------------


def field(low: int, high: int) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    span = st.integers(1, high - low + 1)
    bounds = st.tuples(value, value).map(sorted)
    # cronsim reads a stepped one-value range `5-5/3` as `5/3` (to the field end); Vixie and
    # cronwheel read it as `5` (pinned in EQUIVALENT), so the oracle only gets real ranges.
    wide = bounds.filter(lambda ab: ab[0] < ab[1])
    item = st.one_of(
        value.map(str),
        bounds.map(lambda ab: f"{ab[0]}-{ab[1]}"),
        span.map(lambda step: f"*/{step}"),
        st.tuples(wide, span).map(lambda t: f"{t[0][0]}-{t[0][1]}/{t[1]}"),
    )
    return st.one_of(st.just("*"), st.lists(item, min_size=1, max_size=3).map(",".join))


EXPRESSION = st.tuples(field(0, 59), field(0, 23), field(1, 31), field(1, 12), field(0, 6)).map(
    " ".join
)


@settings(max_examples=150, deadline=None, database=None)
@given(
    cron=EXPRESSION,
    after=st.datetimes(datetime(2000, 1, 1), datetime(2035, 1, 1), timezones=st.just(UTC)),
)
def test_agrees_with_cronsim_in_utc(cron: str, after: datetime) -> None:
    # Given an expression both engines accept
    try:
        expected = list(islice(CronSim(cron, after), 5))
    except CronSimError:
        assume(False)
    # When ours lists the fires after the same instant, Then it agrees with cronsim
    assert first_fires(cron, 5, after=after) == expected


# ---------------------------------------------------------------------------------------------
# Jenkins H
# ---------------------------------------------------------------------------------------------

SEEDS = [f"sched-{n:04d}" for n in range(200)]


def test_hash_is_stable_for_a_seed() -> None:
    # Given a schedule id, When its H schedule is compiled, Then it picks the same slot every
    # time, in every process: sha256 of the id, pinned here so a change is noticed.
    first = first_fires("H H * * *", 2, seed="sched-0001")
    assert first == first_fires("H H * * *", 2, seed="sched-0001")
    assert first == [z("2025-01-01T16:26"), z("2025-01-02T16:26")]


def test_hash_spreads_seeds_over_the_hour() -> None:
    # Given 200 schedules `H * * * *`, When each picks its minute
    minutes = {first_fires("H * * * *", 1, seed=seed)[0].minute for seed in SEEDS}
    # Then they cover most of the 60 minutes (about 58 expected for a uniform hash)
    assert len(minutes) >= 50


def test_each_hashed_field_picks_independently() -> None:
    # Given `H H * * *` for 200 ids, Then (minute, hour) pairs are not tied to each other
    pairs = {
        (fire.minute, fire.hour)
        for seed in SEEDS
        for fire in first_fires("H H * * *", 1, seed=seed)
    }
    assert len(pairs) >= 180
    assert len({hour for _, hour in pairs}) == 24


def test_hashed_range_stays_in_range() -> None:
    minutes = {first_fires("H(0-29) * * * *", 1, seed=seed)[0].minute for seed in SEEDS}
    assert minutes <= set(range(30))
    assert len(minutes) >= 25


def test_hashed_step_gives_evenly_spaced_minutes_offset_by_the_hash() -> None:
    offsets = set()
    for seed in SEEDS[:40]:
        # Given `H/15 * * * *`, When one hour of fires is listed
        minutes = [fire.minute for fire in first_fires("H/15 * * * *", 4, seed=seed)]
        # Then there are 4 minutes 15 apart, starting somewhere in the first quarter
        offset = min(minutes)
        assert sorted(minutes) == [offset, offset + 15, offset + 30, offset + 45]
        offsets.add(offset)
    assert len(offsets) >= 8


def test_hashed_range_with_step() -> None:
    for seed in SEEDS[:40]:
        hours = {fire.hour for fire in first_fires("0 H(8-17)/3 * * *", 4, seed=seed)}
        start = min(hours)
        assert 8 <= start <= 10
        assert hours == set(range(start, 18, 3))


def test_hashed_day_of_month_exists_in_every_month() -> None:
    days = {first_fires("0 0 H * *", 1, seed=seed)[0].day for seed in SEEDS}
    assert days <= set(range(1, 29))


def test_hashed_day_of_week_and_month() -> None:
    for seed in SEEDS[:20]:
        fires = first_fires("0 0 * H H", 3, seed=seed)
        assert len({fire.month for fire in fires}) == 1
        assert len({fire.isoweekday() for fire in fires}) == 1


def test_expressions_without_h_ignore_the_seed() -> None:
    assert first_fires("0 9 * * THU", 3, seed="a") == first_fires("0 9 * * THU", 3, seed="b")
