"""Rates, start/end bounds, jitter and validation errors of the schedule engine."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from itertools import islice
from typing import Any

import pytest

from cronwheel.domain.cron import (
    MAX_JITTER_S,
    ScheduleExpressionError,
    compile_recurrence,
    jitter_offset_s,
    validate_timezone,
)


def z(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# ---------------------------------------------------------------------------------------------
# Rates
# ---------------------------------------------------------------------------------------------

RATES = {
    "seconds_minimum": ("5 seconds", 5),
    "singular_unit": ("1 minute", 60),
    "plural_unit": ("15 minutes", 900),
    "hours": ("2 hours", 7200),
    "days_are_24h": ("1 day", 86400),
    "eventbridge_spelling": ("rate(5 minutes)", 300),
    "case_insensitive": ("10 MINUTES", 600),
}


@pytest.mark.parametrize(("rate", "period_s"), RATES.values(), ids=RATES.keys())
def test_rate_fires_every_period_from_its_anchor(rate: str, period_s: int) -> None:
    # Given a rate anchored at the schedule's creation
    created_at = z("2026-03-29T00:59:07")
    recurrence = compile_recurrence(rate=rate, anchor=created_at)

    # When listing fires from the creation on
    fires = list(islice(recurrence.iter_after(created_at), 3))

    # Then they are anchor + k * period, k >= 1
    assert fires == [created_at + timedelta(seconds=k * period_s) for k in (1, 2, 3)]


def test_rate_first_fire_is_start_at() -> None:
    start_at = z("2026-05-01T12:00:00")
    recurrence = compile_recurrence(rate="10 minutes", start_at=start_at, anchor=z("2026-01-01"))
    assert list(islice(recurrence.iter_after(z("2026-04-01T00:00")), 2)) == [
        start_at,
        start_at + timedelta(minutes=10),
    ]


def test_rate_ignores_the_timezone_and_dst() -> None:
    # Given the same daily rate in UTC and in Berlin across the spring-forward night
    anchor = z("2026-03-27T10:00")
    in_utc = compile_recurrence(rate="1 day", anchor=anchor)
    in_berlin = compile_recurrence(rate="1 day", anchor=anchor, timezone="Europe/Berlin")

    # When listing fires, Then both fire every 24 hours of real time
    expected = [z("2026-03-28T10:00"), z("2026-03-29T10:00"), z("2026-03-30T10:00")]
    assert list(islice(in_utc.iter_after(anchor), 3)) == expected
    assert list(islice(in_berlin.iter_after(anchor), 3)) == expected


def test_rate_without_anchor_is_aligned_to_the_epoch() -> None:
    recurrence = compile_recurrence(rate="5 minutes")
    assert recurrence.next_after(z("2026-01-01T10:02:30")) == z("2026-01-01T10:05")


def test_rate_rounds_a_sub_second_anchor_up() -> None:
    recurrence = compile_recurrence(rate="1 minute", anchor=z("2026-01-01T10:00:00.250"))
    assert recurrence.next_after(z("2026-01-01T10:00")) == z("2026-01-01T10:00:01")


def test_next_after_is_strict_and_accepts_any_offset() -> None:
    recurrence = compile_recurrence(cron="0 * * * *")
    on_the_hour = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert recurrence.next_after(on_the_hour) == z("2026-01-01T11:00")
    assert recurrence.next_after(on_the_hour - timedelta(microseconds=1)) == z("2026-01-01T10:00")


# ---------------------------------------------------------------------------------------------
# Bounds
# ---------------------------------------------------------------------------------------------


def test_start_at_is_inclusive_and_nothing_fires_before_it() -> None:
    recurrence = compile_recurrence(cron="0 * * * *", start_at=z("2026-01-01T10:00"))
    assert recurrence.next_after(z("2025-06-01T00:00")) == z("2026-01-01T10:00")


def test_start_at_between_fires_waits_for_the_next_one() -> None:
    recurrence = compile_recurrence(cron="0 * * * *", start_at=z("2026-01-01T10:00:01"))
    assert recurrence.next_after(z("2025-06-01T00:00")) == z("2026-01-01T11:00")


def test_end_at_is_inclusive_and_iteration_stops_after_it() -> None:
    # Given an hourly schedule that ends at 12:00
    recurrence = compile_recurrence(
        cron="0 * * * *", start_at=z("2026-01-01T09:30"), end_at=z("2026-01-01T12:00")
    )
    # When iterating without a limit, Then it yields 10:00, 11:00, 12:00 and stops
    assert list(recurrence.iter_after(z("2026-01-01T00:00"))) == [
        z("2026-01-01T10:00"),
        z("2026-01-01T11:00"),
        z("2026-01-01T12:00"),
    ]
    assert recurrence.next_after(z("2026-01-01T12:00")) is None


def test_rate_stops_at_end_at() -> None:
    recurrence = compile_recurrence(
        rate="30 minutes", start_at=z("2026-01-01T10:00"), end_at=z("2026-01-01T11:15")
    )
    assert list(recurrence.iter_after(z("2026-01-01T00:00"))) == [
        z("2026-01-01T10:00"),
        z("2026-01-01T10:30"),
        z("2026-01-01T11:00"),
    ]


def test_compiling_is_cached() -> None:
    first = compile_recurrence(cron="*/5 * * * *", timezone="Europe/Berlin", seed="s1")
    assert compile_recurrence(cron="*/5 * * * *", timezone="Europe/Berlin", seed="s1") is first


def test_local_time_for_previews() -> None:
    recurrence = compile_recurrence(cron="30 2 * * *", timezone="Europe/Amsterdam")
    fire = recurrence.next_after(z("2026-03-28T12:00"))
    assert fire is not None
    assert recurrence.local_time(fire).isoformat() == "2026-03-29T03:00:00+02:00"


# ---------------------------------------------------------------------------------------------
# Jitter
# ---------------------------------------------------------------------------------------------


def test_jitter_is_deterministic_per_occurrence() -> None:
    scheduled_for = z("2026-09-26T09:00")
    offset = jitter_offset_s("sched-1", scheduled_for, 600)
    assert offset == jitter_offset_s("sched-1", scheduled_for, 600)
    in_paris = scheduled_for.astimezone(timezone(timedelta(hours=2)))
    assert offset == jitter_offset_s("sched-1", in_paris, 600)
    assert offset == 360  # pinned: sha256-based, the same in every process


def test_jitter_stays_in_range_and_spreads() -> None:
    # Given one schedule with a 60-second jitter, When 2000 occurrences are jittered
    start = z("2026-01-01T00:00")
    offsets = [jitter_offset_s("sched-1", start + timedelta(minutes=n), 60) for n in range(2000)]
    # Then every delay is within [0, 60] and the window is used from end to end
    assert min(offsets) == 0
    assert max(offsets) == 60
    assert len(set(offsets)) == 61


def test_jitter_differs_between_schedules() -> None:
    scheduled_for = z("2026-01-01T00:00")
    offsets = {jitter_offset_s(f"sched-{n}", scheduled_for, 3600) for n in range(100)}
    assert len(offsets) >= 95


def test_zero_jitter_is_no_delay() -> None:
    assert jitter_offset_s("sched-1", z("2026-01-01T00:00"), 0) == 0


# ---------------------------------------------------------------------------------------------
# Validation errors name the field and say what is wrong
# ---------------------------------------------------------------------------------------------

NAIVE = datetime(2026, 1, 1)
ERRORS: dict[str, tuple[dict[str, Any], str, str]] = {
    "minute_out_of_range": (
        {"cron": "61 * * * *"},
        "cron",
        "minute field: 61 is out of range 0-59",
    ),
    "hour_out_of_range": ({"cron": "0 24 * * *"}, "cron", "hour field: 24 is out of range 0-23"),
    "dom_out_of_range": ({"cron": "0 0 0 * *"}, "cron", "day-of-month field: 0 is out of range"),
    "month_out_of_range": ({"cron": "0 0 1 13 *"}, "cron", "month field: 13 is out of range 1-12"),
    "dow_out_of_range": ({"cron": "0 0 * * 8"}, "cron", "day-of-week field: 8 is out of range 0-7"),
    "too_few_fields": ({"cron": "* * * *"}, "cron", "expected 5 fields"),
    "seconds_field": ({"cron": "0 * * * * *"}, "cron", "seconds are not supported"),
    "empty": ({"cron": "  "}, "cron", "cron expression is empty"),
    "zero_step": ({"cron": "*/0 * * * *"}, "cron", "step in '*/0' must be at least 1"),
    "step_too_large": ({"cron": "*/61 * * * *"}, "cron", "step 61 in '*/61' is larger than"),
    "reversed_range": ({"cron": "0 5-1 * * *"}, "cron", "hour field: range '5-1' is reversed"),
    "not_a_number": ({"cron": "x * * * *"}, "cron", "minute field: 'x' is not a number"),
    "bad_month_name": ({"cron": "0 0 1 FOO *"}, "cron", "'FOO' is not a number or a month name"),
    "bad_day_name": ({"cron": "0 0 * * MON-FOO"}, "cron", "'FOO' is not a number or a day name"),
    "day_name_in_hour": ({"cron": "0 MON * * *"}, "cron", "hour field: 'MON' is not a number"),
    "empty_list_item": ({"cron": "1,,2 * * * *"}, "cron", "minute field: empty list item"),
    "half_range": ({"cron": "5- * * * *"}, "cron", "'5-' is missing a number"),
    "quartz_extension": ({"cron": "0 0 L * *"}, "cron", "not supported"),
    "unknown_macro": ({"cron": "@reboot"}, "cron", "unknown macro '@reboot'"),
    "never_fires": ({"cron": "0 0 30 2 *"}, "cron", "would never fire"),
    "hash_range_out_of_field": ({"cron": "H(5-70) * * * *"}, "cron", "70 is out of range 0-59"),
    "hash_step_too_large": ({"cron": "H(0-9)/20 * * * *"}, "cron", "larger than the 10 values"),
    "malformed_hash": ({"cron": "H(5) * * * *"}, "cron", "is not a valid hash"),
    "unknown_timezone": (
        {"cron": "* * * * *", "timezone": "Mars/Olympus"},
        "timezone",
        "unknown timezone 'Mars/Olympus'",
    ),
    "path_as_timezone": ({"cron": "* * * * *", "timezone": "../etc/passwd"}, "timezone", "unknown"),
    "empty_timezone": ({"cron": "* * * * *", "timezone": ""}, "timezone", "IANA name"),
    "rate_not_a_rate": ({"rate": "5 fortnights"}, "rate", "is not a rate"),
    "rate_zero": ({"rate": "0 minutes"}, "rate", "rate must be at least 1 minute, got 0"),
    "rate_too_fast": ({"rate": "4 seconds"}, "rate", "rate must be at least 5 seconds, got 4"),
    "rate_unbalanced": ({"rate": "rate(5 minutes"}, "rate", "is not a rate"),
    "both_cron_and_rate": ({"cron": "* * * * *", "rate": "5 minutes"}, "cron", "exactly one"),
    "neither_cron_nor_rate": ({}, "cron", "exactly one of cron or rate"),
    "naive_start_at": ({"rate": "5 minutes", "start_at": NAIVE}, "start_at", "timezone offset"),
    "naive_end_at": ({"rate": "5 minutes", "end_at": NAIVE}, "end_at", "timezone offset"),
    "naive_anchor": ({"rate": "5 minutes", "anchor": NAIVE}, "anchor", "timezone offset"),
    "end_before_start": (
        {"rate": "5 minutes", "start_at": z("2026-01-02"), "end_at": z("2026-01-01")},
        "end_at",
        "end_at must be later than start_at",
    ),
}


@pytest.mark.parametrize(("kwargs", "field", "message"), ERRORS.values(), ids=ERRORS.keys())
def test_invalid_input_names_the_field(kwargs: dict[str, Any], field: str, message: str) -> None:
    # Given invalid schedule input, When it is compiled
    with pytest.raises(ScheduleExpressionError) as raised:
        compile_recurrence(**kwargs)
    # Then the error names the field and says what is wrong
    assert raised.value.field == field
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_validate_timezone_returns_the_zone() -> None:
    assert validate_timezone("Pacific/Chatham").key == "Pacific/Chatham"


@pytest.mark.parametrize("jitter_s", [-1, MAX_JITTER_S + 1], ids=["negative", "above_max"])
def test_jitter_out_of_range(jitter_s: int) -> None:
    with pytest.raises(ScheduleExpressionError) as raised:
        jitter_offset_s("s", z("2026-01-01"), jitter_s)
    assert raised.value.field == "jitter_s"


def test_naive_instants_are_rejected() -> None:
    recurrence = compile_recurrence(cron="* * * * *")
    with pytest.raises(ScheduleExpressionError) as raised:
        recurrence.next_after(NAIVE)
    assert raised.value.field == "after"
    with pytest.raises(ScheduleExpressionError) as raised:
        jitter_offset_s("s", NAIVE, 10)
    assert raised.value.field == "scheduled_for"
