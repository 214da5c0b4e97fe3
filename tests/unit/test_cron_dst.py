"""The DST rule of the schedule engine (ARCHITECTURE.md, "Semantics" -> Time).

Fixed-time schedules (minute and hour fields do not start with `*`) shift a gap time to the first
instant after the gap and fire a repeated time once, at its first occurrence; all other schedules
fire at every wall-clock time that occurs and matches. Same-instant occurrences fire once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise, takewhile
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronwheel.domain.cron import Recurrence, compile_recurrence


def z(text: str) -> datetime:
    """A UTC instant written compactly: '2026-03-29T01:00'."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def fires_between(recurrence: Recurrence, after: datetime, until: datetime) -> list[datetime]:
    """Fire instants in (after, until]."""
    return list(takewhile(lambda fire: fire <= until, recurrence.iter_after(after)))


@dataclass(frozen=True)
class DstCase:
    cron: str
    timezone: str
    after: str
    until: str
    expected: tuple[str, ...]


DST_CASES = {
    # Europe/Amsterdam 2026: 02:00 CET -> 03:00 CEST on 03-29, 03:00 CEST -> 02:00 CET on 10-25.
    "spring_gap_shift": DstCase(
        "30 2 * * *",
        "Europe/Amsterdam",
        "2026-03-28T12:00",
        "2026-03-30T12:00",
        ("2026-03-29T01:00", "2026-03-30T00:30"),
    ),
    "fall_repeat_first": DstCase(
        "30 2 * * *",
        "Europe/Amsterdam",
        "2026-10-24T12:00",
        "2026-10-26T12:00",
        ("2026-10-25T00:30", "2026-10-26T01:30"),
    ),
    "fall_repeat_first_on_the_hour": DstCase(
        "0 2 * * *", "Europe/Berlin", "2023-10-28T12:00", "2023-10-29T12:00", ("2023-10-29T00:00",)
    ),
    "fall_fixed_range_skips_second_pass": DstCase(
        "0 1-3 * * *",
        "Europe/Berlin",
        "2023-10-28T22:00",
        "2023-10-29T03:00",
        ("2023-10-28T23:00", "2023-10-29T00:00", "2023-10-29T02:00"),
    ),
    "gap_shift_merges_with_real_time": DstCase(
        # 02:00 is shifted to 03:00 CEST, which is also a real match: one fire.
        "0 1-3 * * *",
        "Europe/Berlin",
        "2023-03-25T23:30",
        "2023-03-26T03:00",
        ("2023-03-26T00:00", "2023-03-26T01:00"),
    ),
    "gap_shifts_of_two_times_merge": DstCase(
        "0,30 2,3 * * *",
        "Europe/Amsterdam",
        "2026-03-28T23:00",
        "2026-03-29T02:00",
        ("2026-03-29T01:00", "2026-03-29T01:30"),
    ),
    "spring_gap_skip_not_fixed": DstCase(
        "30 * * * *",
        "Europe/Berlin",
        "2023-03-26T00:00",
        "2023-03-26T01:45",
        ("2023-03-26T00:30", "2023-03-26T01:30"),
    ),
    "fall_repeat_both_passes_not_fixed": DstCase(
        "*/20 1 * * *",
        "Europe/London",
        "2024-10-26T23:30",
        "2024-10-27T03:00",
        (
            "2024-10-27T00:00",
            "2024-10-27T00:20",
            "2024-10-27T00:40",
            "2024-10-27T01:00",
            "2024-10-27T01:20",
            "2024-10-27T01:40",
        ),
    ),
    "every_two_hours_across_fall_back": DstCase(
        "0 */2 * * *",
        "Europe/London",
        "2024-10-26T20:00",
        "2024-10-27T06:00",
        (
            "2024-10-26T21:00",
            "2024-10-26T23:00",
            "2024-10-27T02:00",
            "2024-10-27T04:00",
            "2024-10-27T06:00",
        ),
    ),
    "croniter_double_fire_new_york": DstCase(
        # croniter 7.0.0 fires this twice (05:30Z and 06:30Z); Vixie fires the first pass only.
        "30 1 * * *",
        "America/New_York",
        "2025-11-02T00:00",
        "2025-11-02T12:00",
        ("2025-11-02T05:30",),
    ),
    "spring_gap_shift_new_york": DstCase(
        "30 2 * * *",
        "America/New_York",
        "2025-03-09T00:00",
        "2025-03-09T12:00",
        ("2025-03-09T07:00",),
    ),
    "daily_midnight_us_pacific": DstCase(
        "0 0 * * *",
        "US/Pacific",
        "2022-03-11T12:00",
        "2022-03-15T12:00",
        ("2022-03-12T08:00", "2022-03-13T08:00", "2022-03-14T07:00", "2022-03-15T07:00"),
    ),
    # Australia/Lord_Howe moves by 30 minutes: 02:00 +10:30 -> 02:30 +11 (2019-10-05T15:30Z),
    # 02:00 +11 -> 01:30 +10:30 (2019-04-06T15:00Z).
    "half_hour_gap_hourly_lord_howe": DstCase(
        "0 * * * *",
        "Australia/Lord_Howe",
        "2019-10-05T13:00",
        "2019-10-05T16:30",
        ("2019-10-05T13:30", "2019-10-05T14:30", "2019-10-05T16:00"),
    ),
    "half_hour_gap_shift_lord_howe": DstCase(
        "0 2 * * *",
        "Australia/Lord_Howe",
        "2019-10-05T12:00",
        "2019-10-06T12:00",
        ("2019-10-05T15:30",),
    ),
    "half_hour_repeat_first_lord_howe": DstCase(
        "45 1 * * *",
        "Australia/Lord_Howe",
        "2019-04-06T12:00",
        "2019-04-07T12:00",
        ("2019-04-06T14:45",),
    ),
    "half_hour_repeat_both_passes_lord_howe": DstCase(
        "*/15 1 * * *",
        "Australia/Lord_Howe",
        "2019-04-06T13:30",
        "2019-04-06T16:00",
        (
            "2019-04-06T14:00",
            "2019-04-06T14:15",
            "2019-04-06T14:30",
            "2019-04-06T14:45",
            "2019-04-06T15:00",
            "2019-04-06T15:15",
        ),
    ),
    # Pacific/Chatham (+12:45/+13:45): 02:45 -> 03:45 on 2019-09-29, 03:45 -> 02:45 on 2019-04-07,
    # both at 14:00Z the day before.
    "chatham_gap_shift": DstCase(
        "0 3 * * *",
        "Pacific/Chatham",
        "2019-09-28T12:00",
        "2019-09-29T12:00",
        ("2019-09-28T14:00",),
    ),
    "chatham_gap_hourly": DstCase(
        "0 * * * *",
        "Pacific/Chatham",
        "2019-09-28T13:00",
        "2019-09-28T14:30",
        ("2019-09-28T13:15", "2019-09-28T14:15"),
    ),
    "chatham_repeat_first": DstCase(
        "0 3 * * *",
        "Pacific/Chatham",
        "2019-04-06T12:00",
        "2019-04-07T12:00",
        ("2019-04-06T13:15",),
    ),
    "chatham_repeat_hourly_both_passes": DstCase(
        "0 * * * *",
        "Pacific/Chatham",
        "2019-04-06T13:00",
        "2019-04-06T14:30",
        ("2019-04-06T13:15", "2019-04-06T14:15"),
    ),
    # America/Santiago changes at midnight: 00:00 -04 -> 01:00 -03 (2022-09-11T04:00Z) and
    # 24:00 -03 -> 23:00 -04 (2023-04-02T03:00Z).
    "midnight_gap_shift_santiago": DstCase(
        "0 0 * * *",
        "America/Santiago",
        "2022-09-10T12:00",
        "2022-09-12T12:00",
        ("2022-09-11T04:00", "2022-09-12T03:00"),
    ),
    "midnight_gap_skip_santiago": DstCase(
        "30 * * * *",
        "America/Santiago",
        "2022-09-11T02:45",
        "2022-09-11T05:00",
        ("2022-09-11T03:30", "2022-09-11T04:30"),
    ),
    "midnight_repeat_first_santiago": DstCase(
        "30 23 * * *",
        "America/Santiago",
        "2023-04-01T12:00",
        "2023-04-02T12:00",
        ("2023-04-02T02:30",),
    ),
    "midnight_repeat_both_passes_santiago": DstCase(
        "30 * * * *",
        "America/Santiago",
        "2023-04-02T02:00",
        "2023-04-02T04:00",
        ("2023-04-02T02:30", "2023-04-02T03:30"),
    ),
    "midnight_after_fall_back_santiago": DstCase(
        "0 0 * * *",
        "America/Santiago",
        "2023-04-01T12:00",
        "2023-04-02T12:00",
        ("2023-04-02T04:00",),
    ),
    # America/Havana: 00:00 -05 -> 01:00 -04 (2023-03-12T05:00Z), 01:00 -04 -> 00:00 -05
    # (2023-11-05T05:00Z).
    "midnight_gap_shift_havana": DstCase(
        "0 0 * * *",
        "America/Havana",
        "2023-03-11T12:00",
        "2023-03-12T12:00",
        ("2023-03-12T05:00",),
    ),
    "midnight_gap_skip_havana": DstCase(
        "30 * * * *",
        "America/Havana",
        "2023-03-12T03:45",
        "2023-03-12T06:00",
        ("2023-03-12T04:30", "2023-03-12T05:30"),
    ),
    "midnight_repeat_first_havana": DstCase(
        "0 0 * * *",
        "America/Havana",
        "2023-11-04T12:00",
        "2023-11-05T12:00",
        ("2023-11-05T04:00",),
    ),
    "midnight_repeat_both_passes_havana": DstCase(
        "0 * * * *",
        "America/Havana",
        "2023-11-05T03:30",
        "2023-11-05T06:30",
        ("2023-11-05T04:00", "2023-11-05T05:00", "2023-11-05T06:00"),
    ),
    # Pacific/Apia skipped 2011-12-30 entirely (-10 -> +14 at 2011-12-30T10:00Z).
    "skipped_day_apia": DstCase(
        "0 12 * * *",
        "Pacific/Apia",
        "2011-12-29T12:00",
        "2011-12-31T12:00",
        ("2011-12-29T22:00", "2011-12-30T10:00", "2011-12-30T22:00"),
    ),
}


@pytest.mark.parametrize("case", DST_CASES.values(), ids=DST_CASES.keys())
def test_dst_table(case: DstCase) -> None:
    # Given a cron schedule in a zone with a transition inside the window
    recurrence = compile_recurrence(cron=case.cron, timezone=case.timezone)

    # When the fires in the window are listed
    fires = fires_between(recurrence, z(case.after), z(case.until))

    # Then they are exactly the expected instants, strictly increasing
    assert fires == [z(text) for text in case.expected]
    assert all(earlier < later for earlier, later in pairwise(fires))


def test_every_minute_across_fall_back_fires_every_real_minute() -> None:
    # Given `* * * * *` in Berlin, whose 02:00-03:00 repeats on 2023-10-29
    recurrence = compile_recurrence(cron="* * * * *", timezone="Europe/Berlin")

    # When listing (00:00Z, 02:00Z]
    fires = fires_between(recurrence, z("2023-10-29T00:00"), z("2023-10-29T02:00"))

    # Then every one of the 120 real minutes fires once
    assert len(fires) == 120
    assert len(set(fires)) == 120


def test_daily_midnight_fires_once_on_every_local_date_across_spring_forward() -> None:
    # Given a daily midnight schedule on the US west coast
    recurrence = compile_recurrence(cron="0 0 * * *", timezone="US/Pacific")

    # When listing March 2022 (clocks spring forward at 02:00 on the 13th)
    fires = fires_between(recurrence, z("2022-03-01T00:00"), z("2022-04-01T00:00"))

    # Then each local date from 03-01 to 03-31 has exactly one fire, at local midnight
    local = [recurrence.local_time(fire) for fire in fires]
    assert [stamp.day for stamp in local] == list(range(1, 32))
    assert {(stamp.hour, stamp.minute) for stamp in local} == {(0, 0)}


def test_is_fixed_time_follows_the_minute_and_hour_fields() -> None:
    # Given schedules of each kind, Then only those without a leading `*` are fixed-time
    fixed = ["30 2 * * *", "0 1-3 * * *", "H H * * *", "@daily", "H/15 2 * * *", "0,30 4 * * *"]
    not_fixed = ["*/15 * * * *", "0 */2 * * *", "* 2 * * *", "@hourly", "0 * * * *"]
    assert all(compile_recurrence(cron=cron).is_fixed_time for cron in fixed)
    assert not any(compile_recurrence(cron=cron).is_fixed_time for cron in not_fixed)
    assert not compile_recurrence(rate="5 minutes").is_fixed_time


# ---------------------------------------------------------------------------------------------
# Property: the engine agrees with a minute-by-minute reading of the rule.
# ---------------------------------------------------------------------------------------------

# (zone, a transition instant) - the window drawn around it always contains the transition.
TRANSITIONS = [
    ("Europe/Berlin", "2023-03-26T01:00"),
    ("Europe/Berlin", "2023-10-29T01:00"),
    ("Europe/London", "2024-10-27T01:00"),
    ("America/New_York", "2025-03-09T07:00"),
    ("America/New_York", "2025-11-02T06:00"),
    ("Australia/Lord_Howe", "2019-10-05T15:30"),
    ("Australia/Lord_Howe", "2019-04-06T15:00"),
    ("Pacific/Chatham", "2019-09-28T14:00"),
    ("Pacific/Chatham", "2019-04-06T14:00"),
    ("America/Santiago", "2022-09-11T04:00"),
    ("America/Santiago", "2023-04-02T03:00"),
    ("America/Havana", "2023-03-12T05:00"),
    ("America/Havana", "2023-11-05T05:00"),
    ("Pacific/Apia", "2011-12-30T10:00"),
    ("Asia/Kolkata", "2024-06-01T00:00"),
    ("UTC", "2024-02-29T00:00"),
]
EXPRESSIONS = [
    "* * * * *",
    "*/15 * * * *",
    "0 * * * *",
    "30 * * * *",
    "0 */2 * * *",
    "* 2 * * *",
    "*/7 1-3 * * *",
    "30 2 * * *",
    "0 2 * * *",
    "0 0 * * *",
    "30 0 * * *",
    "45 23 * * *",
    "0,30 0-3 * * *",
    "0 1-3 * * *",
    "59 1 * * *",
    "15 3 * * 0",
    "0 12 30 * *",
    "0 0 * * 6,0",
    "H H * * *",
    "H/10 H(0-3) * * *",
    "H * * * *",
    "@hourly",
    "@daily",
]
WINDOW = 72 * 3600


def expected_by_brute_force(recurrence: Recurrence, start: int, end: int) -> list[int]:
    """Read the rule minute by minute in UTC: the oracle for the search-based engine."""
    zone = ZoneInfo(recurrence.timezone)
    fixed = recurrence.is_fixed_time
    expected: list[int] = []
    previous_offset: int | None = None
    first = start - start % 60
    for instant in range(first - 60, end + 1, 60):
        local = datetime.fromtimestamp(instant, zone)
        offset = int(local.utcoffset().total_seconds())  # type: ignore[union-attr]
        if previous_offset is not None and instant > start:
            if fixed and offset > previous_offset:
                # Wall minutes jumped over by the gap fire once, at its end.
                skipped = range(instant + previous_offset, instant + offset, 60)
                if any(
                    recurrence.matches_local(datetime.fromtimestamp(wall, UTC)) for wall in skipped
                ):
                    expected.append(instant)
                    previous_offset = offset
                    continue
            if recurrence.matches_local(local) and not (fixed and local.fold):
                expected.append(instant)
        previous_offset = offset
    return expected


@settings(max_examples=80, deadline=None, database=None)
@given(
    transition=st.sampled_from(TRANSITIONS),
    lead_minutes=st.integers(min_value=1, max_value=60 * 60),
    cron=st.sampled_from(EXPRESSIONS),
    seed=st.text(min_size=0, max_size=12),
)
def test_fires_agree_with_a_minute_by_minute_reading_of_the_rule(
    transition: tuple[str, str], lead_minutes: int, cron: str, seed: str
) -> None:
    # Given a schedule and a 72-hour window that contains a transition of its zone
    timezone, instant = transition
    recurrence = compile_recurrence(cron=cron, timezone=timezone, seed=seed)
    start = int(z(instant).timestamp()) - lead_minutes * 60 - 17
    end = start + WINDOW

    # When the engine lists the fires in the window (which must terminate)
    after = datetime.fromtimestamp(start, UTC)
    fires = fires_between(recurrence, after, datetime.fromtimestamp(end, UTC))

    # Then they are strictly increasing and never repeat an instant
    stamps = [int(fire.timestamp()) for fire in fires]
    assert all(earlier < later for earlier, later in pairwise(stamps))
    # And each is a matching local time, or (fixed-time only) the end of a gap
    zone = ZoneInfo(timezone)
    for fire in fires:
        local = fire.astimezone(zone)
        before = (fire - timedelta(seconds=1)).astimezone(zone)
        at_gap_end = before.utcoffset() != local.utcoffset() and recurrence.is_fixed_time
        assert recurrence.matches_local(local) or at_gap_end
    # And they are exactly what reading the rule minute by minute gives
    assert stamps == expected_by_brute_force(recurrence, start, end)
