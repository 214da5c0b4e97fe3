"""Schedule engine: when does a cron or rate schedule fire.

Pure domain code: no AWS, no clock. Callers pass instants (timezone-aware datetimes) and get UTC
instants back. The rules implemented here are documented for users in ``docs/time.md``:

* Cron expressions have 5 fields (minute hour day-of-month month day-of-week) with lists, ranges,
  steps, month and day names, ``7`` as Sunday, the ``@daily``-style macros and Jenkins ``H``
  hashing (``H``, ``H(a-b)``, ``H/n``, ``H(a-b)/n``) seeded by the schedule id. Day-of-month and
  day-of-week follow Vixie cron: when both fields are restricted (neither starts with ``*``) a day
  matching either one matches.
* Daylight saving time follows Vixie cron. A *fixed-time* schedule (neither the minute nor the
  hour field starts with ``*``) fires a local time that falls in a gap once, at the first instant
  after the gap, and a local time that occurs twice once, at its first occurrence. Any other
  schedule fires at every wall-clock time that actually occurs and matches. Occurrences landing on
  the same instant fire once.
* Rates (``"5 minutes"``) fire at ``anchor + k * period``, independent of the timezone.

Expressions are parsed once and cached; finding the next fire uses per-field bitmasks and a table
of the zone's UTC-offset transitions, so it jumps month by month, day by day and hour by hour in
local time instead of testing every minute.
"""

from __future__ import annotations

import hashlib
import math
import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache, lru_cache
from typing import Final, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "MAX_JITTER_S",
    "MIN_RATE_SECONDS",
    "Recurrence",
    "ScheduleExpressionError",
    "compile_recurrence",
    "jitter_offset_s",
    "validate_timezone",
]

MIN_RATE_SECONDS: Final = 5
"""Shortest period a ``rate`` in seconds may have."""

MAX_JITTER_S: Final = 3600
"""Largest ``jitter_s`` a schedule may ask for."""


class ScheduleExpressionError(ValueError):
    """A schedule input is invalid.

    ``field`` names the input at fault (``"cron"``, ``"rate"``, ``"timezone"``, ``"start_at"``,
    ``"end_at"``, ``"anchor"``, ``"jitter_s"``, ``"after"``...) and ``message`` says what is wrong
    in words a user can act on, e.g. ``"minute field: 61 is out of range 0-59"``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# --------------------------------------------------------------------------------------------
# Cron parsing
# --------------------------------------------------------------------------------------------

_FIELD_NAMES: Final = ("minute", "hour", "day-of-month", "month", "day-of-week")
_BOUNDS: Final = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
# `*` and `H` in day-of-week cover 0-6 (7 is only an alias of Sunday); `H` in day-of-month picks
# from 1-28 so that a hashed day exists in every month.
_STAR_BOUNDS: Final = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_HASH_BOUNDS: Final = ((0, 59), (0, 23), (1, 28), (1, 12), (0, 6))
_MONTH_NAMES: Final = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"), 1
    )
}
_DOW_NAMES: Final = {
    name: number for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))
}
_MACROS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_NUMBER: Final = re.compile(r"[0-9]+")
_HASH_ITEM: Final = re.compile(r"H(?:\(([^()\-]*)-([^()\-]*)\))?")
# An `H` token on its own, not the H inside THU.
_HAS_HASH: Final = re.compile(r"(?<![A-Z])H(?![A-Z])")
_DAYS_IN_MONTH: Final = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MAX_DAYS_IN_MONTH: Final = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ORDINAL_1970: Final = date(1970, 1, 1).toordinal()
# Compiled schedules kept per process: about 1 KiB each, so this bounds the caches to ~10 MiB.
_CACHE_SIZE: Final = 8192
_FIRST_YEAR: Final = 1900
_LAST_YEAR: Final = 9000


def _cron_error(message: str) -> ScheduleExpressionError:
    return ScheduleExpressionError("cron", message)


def _lowest_bit(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _bits(values: range) -> int:
    if values.step == 1:
        return (1 << values.stop) - (1 << values.start) if values else 0
    mask = 0
    for value in values:
        mask |= 1 << value
    return mask


def _hash_value(seed: str, field_index: int, item_index: int) -> int:
    """A stable 64-bit number per (seed, field, list item): each `H` picks independently."""
    material = f"cronwheel:H\x1f{seed}\x1f{field_index}\x1f{item_index}".encode()
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big")


def _parse_value(index: int, text: str, item: str) -> int:
    name = _FIELD_NAMES[index]
    if _NUMBER.fullmatch(text):
        return int(text) if len(text) <= 9 else 10**9  # too long is just out of range
    upper = text.upper()
    if index == 3 and upper in _MONTH_NAMES:
        return _MONTH_NAMES[upper]
    if index == 4 and upper in _DOW_NAMES:
        return _DOW_NAMES[upper]
    if not text:
        raise _cron_error(f"{name} field: {item!r} is missing a number")
    expected = {3: "a number or a month name (JAN-DEC)", 4: "a number or a day name (SUN-SAT)"}
    hint = ""
    if any(ch in text for ch in "?#") or upper in {"L", "W", "LW"}:
        hint = " (the Quartz extensions ?, L, W and # are not supported)"
    raise _cron_error(f"{name} field: {text!r} is not {expected.get(index, 'a number')}{hint}")


def _check_in_range(index: int, value: int) -> None:
    low, high = _BOUNDS[index]
    if not low <= value <= high:
        raise _cron_error(f"{_FIELD_NAMES[index]} field: {value} is out of range {low}-{high}")


def _parse_step(index: int, item: str, text: str, span: int) -> int:
    name = _FIELD_NAMES[index]
    if not _NUMBER.fullmatch(text):
        raise _cron_error(f"{name} field: step {text!r} in {item!r} is not a positive number")
    step = int(text) if len(text) <= 9 else 10**9
    if step < 1:
        raise _cron_error(f"{name} field: step in {item!r} must be at least 1")
    if step > span:
        raise _cron_error(
            f"{name} field: step {step} in {item!r} is larger than the {span} values it steps over"
        )
    return step


def _parse_range(index: int, text: str, item: str) -> tuple[int, int]:
    """Parse `a-b` (or `a`) into bounds checked against the field's range."""
    start_text, dash, end_text = text.partition("-")
    start = _parse_value(index, start_text, item)
    end = _parse_value(index, end_text, item) if dash else start
    _check_in_range(index, start)
    _check_in_range(index, end)
    if index == 4 and dash and end == 0 and start > 0:
        end = 7  # FRI-SUN reads naturally; SUN is 0 but ends the week here.
    if start > end:
        raise _cron_error(
            f"{_FIELD_NAMES[index]} field: range {text!r} is reversed (start must not exceed end)"
        )
    return start, end


def _parse_hash_item(
    index: int, base: str, step_text: str | None, item: str, seed: str, k: int
) -> int:
    name = _FIELD_NAMES[index]
    match = _HASH_ITEM.fullmatch(base.upper())
    if match is None:
        raise _cron_error(
            f"{name} field: {item!r} is not a valid hash; use H, H(a-b), H/n or H(a-b)/n"
        )
    if match.group(1) is None:
        low, high = _HASH_BOUNDS[index]
    else:
        low, high = _parse_range(index, f"{match.group(1)}-{match.group(2)}", item)
    digest = _hash_value(seed, index, k)
    span = high - low + 1
    if step_text is None:
        return 1 << (low + digest % span)
    step = _parse_step(index, item, step_text, span)
    return _bits(range(low + digest % step, high + 1, step))


def _parse_item(index: int, item: str, seed: str, k: int) -> int:
    name = _FIELD_NAMES[index]
    if not item:
        raise _cron_error(f"{name} field: empty list item")
    base, slash, step_text = item.partition("/")
    if base[:1] in ("H", "h"):  # no month or day name starts with H
        return _parse_hash_item(index, base, step_text if slash else None, item, seed, k)
    if base == "*":
        low, high = _STAR_BOUNDS[index]
    elif slash and "-" not in base:
        # `a/n` means from a to the end of the field, stepping by n.
        low = _parse_value(index, base, item)
        _check_in_range(index, low)
        high = _STAR_BOUNDS[index][1] if low <= _STAR_BOUNDS[index][1] else low
    else:
        low, high = _parse_range(index, base, item)
    if not slash:
        return _bits(range(low, high + 1))
    # A step wider than the range just selects its start (as in Vixie cron), but one wider
    # than the whole field is surely a mistake.
    step = _parse_step(index, item, step_text, _STAR_BOUNDS[index][1] - _STAR_BOUNDS[index][0] + 1)
    return _bits(range(low, high + 1, step))


def _parse_field(index: int, text: str, seed: str) -> int:
    mask = 0
    for k, item in enumerate(text.split(",")):
        mask |= _parse_item(index, item, seed, k)
    if index == 4 and mask & (1 << 7):
        mask = (mask | 1) & 0x7F  # 7 is Sunday
    return mask


@dataclass(frozen=True, slots=True)
class _CronSpec:
    """A parsed cron expression: one bitmask per field, plus derived lookups."""

    minutes: int
    hours: int
    months: int
    first_minute: int
    fixed_time: bool
    # Allowed days (bits 1-31) of a month whose 1st falls on weekday w (0 = Sunday), before
    # trimming to the month's length; dom and dow are already combined with AND or OR.
    day_masks: tuple[int, ...]

    def matches_wall(self, wall: datetime) -> bool:
        """Does this naive local wall time (minute resolution) match the expression?"""
        first = date(wall.year, wall.month, 1)
        days = self.day_masks[(first.toordinal() - _ORDINAL_1970 + 4) % 7]
        return bool(
            (self.minutes >> wall.minute) & 1
            and (self.hours >> wall.hour) & 1
            and (self.months >> wall.month) & 1
            and (days >> wall.day) & 1
        )

    def _first_time(self, hour: int, minute: int) -> int:
        """First matching minute of the day at or after hour:minute, or -1."""
        hours = self.hours >> hour
        if not hours:
            return -1
        if hours & 1:
            minutes = self.minutes >> minute
            if minutes:
                return hour * 60 + minute + _lowest_bit(minutes)
            hours &= ~1
            if not hours:
                return -1
        return (hour + _lowest_bit(hours)) * 60 + self.first_minute

    def _next_month(self, year: int, month: int) -> tuple[int, int]:
        """First allowed (year, month) strictly after the given one."""
        later = self.months >> (month + 1)
        if later:
            return year, month + 1 + _lowest_bit(later)
        return year + 1, _lowest_bit(self.months)

    def first_match(self, low: int, high: int) -> int | None:
        """First matching wall time ``w`` (seconds since 1970-01-01 local) with low <= w < high."""
        minute_of_epoch = -(-low // 60)
        day, minute_of_day = divmod(minute_of_epoch, 1440)
        hour, minute = divmod(minute_of_day, 60)
        current = date.fromordinal(day + _ORDINAL_1970)
        year, month, dom = current.year, current.month, current.day
        while day * 86400 < high:
            if not (self.months >> month) & 1:
                year, month = self._next_month(year, month)
                if year > _LAST_YEAR:
                    return None
                day = date(year, month, 1).toordinal() - _ORDINAL_1970
                dom, hour, minute = 1, 0, 0
                continue
            days_in_month = _DAYS_IN_MONTH[month]
            if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
                days_in_month = 29
            weekday_of_first = (day - dom + 5) % 7
            allowed = self.day_masks[weekday_of_first] & ((2 << days_in_month) - 2)
            allowed = allowed >> dom << dom
            if not allowed:
                day += days_in_month - dom + 1
                dom, hour, minute = 1, 0, 0
                year, month = (year, month + 1) if month < 12 else (year + 1, 1)
                continue
            next_dom = _lowest_bit(allowed)
            if next_dom != dom:
                day += next_dom - dom
                dom, hour, minute = next_dom, 0, 0
                continue  # re-check the day against `high`
            found = self._first_time(hour, minute)
            if found >= 0:
                wall = (day * 1440 + found) * 60
                return wall if wall < high else None
            day += 1
            dom, hour, minute = dom + 1, 0, 0
            if dom > days_in_month:
                dom = 1
                year, month = (year, month + 1) if month < 12 else (year + 1, 1)
        return None


@cache
def _days_by_weekday(dow: int) -> tuple[int, ...]:
    """Days (bits 1-31) falling on an allowed weekday, for each weekday of the 1st."""
    masks = []
    for weekday_of_first in range(7):
        days = 0
        for day_of_month in range(1, 32):
            if (dow >> ((weekday_of_first + day_of_month - 1) % 7)) & 1:
                days |= 1 << day_of_month
        masks.append(days)
    return tuple(masks)


def _hash_key(expression: str, seed: str) -> str:
    return seed if _HAS_HASH.search(expression.upper()) else ""


@lru_cache(maxsize=_CACHE_SIZE)
def _compile_cron(expression: str, seed: str) -> _CronSpec:
    text = expression.strip()
    if not text:
        raise _cron_error("cron expression is empty")
    if text.startswith("@"):
        macro = _MACROS.get(text.lower())
        if macro is None:
            raise _cron_error(f"unknown macro {text!r}; use one of {', '.join(_MACROS)}")
        text = macro
    fields = text.split()
    if len(fields) != 5:
        hint = "; seconds are not supported, use a rate for sub-minute periods"
        raise _cron_error(
            "expected 5 fields (minute hour day-of-month month day-of-week), "
            f"got {len(fields)} in {expression!r}{hint if len(fields) == 6 else ''}"
        )
    minutes, hours, dom, months, dow = (
        _parse_field(index, text, seed) for index, text in enumerate(fields)
    )
    dom_star, dow_star = fields[2].startswith("*"), fields[4].startswith("*")
    day_and = dom_star or dow_star
    if day_and and not any(
        dom & ((2 << _MAX_DAYS_IN_MONTH[month]) - 2)
        for month in range(1, 13)
        if (months >> month) & 1
    ):
        raise _cron_error(
            "day-of-month field: none of the selected days exists in the selected month(s), "
            "so the schedule would never fire"
        )
    by_weekday = _days_by_weekday(dow)
    day_masks = [dom & days if day_and else dom | days for days in by_weekday]
    return _CronSpec(
        minutes=minutes,
        hours=hours,
        months=months,
        first_minute=_lowest_bit(minutes),
        fixed_time=not (fields[0].startswith("*") or fields[1].startswith("*")),
        day_masks=tuple(day_masks),
    )


def _cron_spec(expression: str, seed: str) -> _CronSpec:
    # Normalise the cache key: only expressions using H depend on the seed.
    return _compile_cron(" ".join(expression.split()), _hash_key(expression, seed))


# --------------------------------------------------------------------------------------------
# Rate parsing
# --------------------------------------------------------------------------------------------

_RATE: Final = re.compile(
    r"\s*(?:rate\(\s*)?([0-9]{1,9})\s*(second|minute|hour|day)s?\s*\)?\s*", re.IGNORECASE
)
_UNIT_SECONDS: Final = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


@lru_cache(maxsize=1024)
def _rate_period(expression: str) -> int:
    match = _RATE.fullmatch(expression)
    if match is None or expression.count("(") != expression.count(")"):
        raise ScheduleExpressionError(
            "rate",
            f"{expression!r} is not a rate; write '<n> <unit>' with unit second(s), minute(s), "
            "hour(s) or day(s), e.g. '5 minutes'",
        )
    count, unit = int(match.group(1)), match.group(2).lower()
    if count < 1:
        raise ScheduleExpressionError("rate", f"rate must be at least 1 {unit}, got {count}")
    period = count * _UNIT_SECONDS[unit]
    if period < MIN_RATE_SECONDS:
        raise ScheduleExpressionError(
            "rate", f"rate must be at least {MIN_RATE_SECONDS} seconds, got {count}"
        )
    return period


# --------------------------------------------------------------------------------------------
# Zone transitions
# --------------------------------------------------------------------------------------------

_CHUNK: Final = 1 << 25  # about 388 days of UTC seconds per cached table
_PROBE: Final = 6 * 3600  # offset sampling step; transitions closer than this are not expected
_FIRST_TS: Final = int(datetime(_FIRST_YEAR, 1, 2, tzinfo=UTC).timestamp())
_LAST_TS: Final = int(datetime(_LAST_YEAR, 1, 1, tzinfo=UTC).timestamp())


@dataclass(frozen=True, slots=True)
class _Chunk:
    """Constant-offset segments of one chunk of UTC time.

    Segment i covers UTC seconds [starts[i], starts[i+1]) (the last one ends at ``end``) with
    UTC offset ``offsets[i]``. ``highs[i]`` is the latest wall time the zone had already shown
    (exclusive) when segment i began: wall times below it are second occurrences, and wall times
    in [highs[i], starts[i] + offsets[i]) were jumped over by a gap.
    """

    starts: list[int]
    offsets: list[int]
    highs: list[int]
    end: int


class _Timeline:
    """UTC-offset transitions of one zone, found by probing zoneinfo and cached per chunk."""

    def __init__(self, zone: ZoneInfo) -> None:
        self._zone = zone
        self._transitions: dict[int, list[tuple[int, int, int]]] = {}
        self._chunks: dict[int, _Chunk] = {}

    def _offset(self, ts: int) -> int:
        offset = datetime.fromtimestamp(ts, self._zone).utcoffset()
        return 0 if offset is None else offset // timedelta(seconds=1)

    def _transitions_in(self, chunk: int) -> list[tuple[int, int, int]]:
        """(instant, offset before, offset after) for transitions in [chunk start, chunk end)."""
        cached = self._transitions.get(chunk)
        if cached is not None:
            return cached
        start = chunk * _CHUNK
        points = [start - 1, *range(start, start + _CHUNK, _PROBE), start + _CHUNK - 1]
        found: list[tuple[int, int, int]] = []
        previous, previous_offset = points[0], self._offset(points[0])
        for point in points[1:]:
            offset = self._offset(point)
            low, low_offset = previous, previous_offset
            while low_offset != offset:
                # Invariant: offset(low) == low_offset != offset(high).
                high = point
                while high - low > 1:
                    middle = (low + high) // 2
                    if self._offset(middle) == low_offset:
                        low = middle
                    else:
                        high = middle
                high_offset = self._offset(high)
                found.append((high, low_offset, high_offset))
                low, low_offset = high, high_offset
            previous, previous_offset = point, offset
        self._transitions[chunk] = found
        return found

    def chunk(self, chunk: int) -> _Chunk:
        cached = self._chunks.get(chunk)
        if cached is not None:
            return cached
        start = chunk * _CHUNK
        high = -(1 << 62)
        for instant, before, _after in self._transitions_in(chunk - 1):
            high = max(high, instant + before)
        starts, offsets, highs = [start], [self._offset(start)], []
        own = self._transitions_in(chunk)
        pre_start = self._offset(start - 1)
        high = max(high, start + pre_start)
        highs.append(high)
        for instant, before, after in own:
            if instant == start:
                continue
            high = max(high, instant + before)
            starts.append(instant)
            offsets.append(after)
            highs.append(high)
        table = _Chunk(starts=starts, offsets=offsets, highs=highs, end=start + _CHUNK)
        self._chunks[chunk] = table
        return table


@cache
def _timeline(zone: ZoneInfo) -> _Timeline:
    return _Timeline(zone)


def _next_cron_fire(spec: _CronSpec, timeline: _Timeline, after: int) -> int | None:
    """First fire instant (UTC seconds) strictly after ``after`` under the DST rule."""
    chunk_index = after // _CHUNK
    table = timeline.chunk(chunk_index)
    i = bisect_right(table.starts, after) - 1
    fixed = spec.fixed_time
    offset = table.offsets[i]
    low = after + offset + 1
    if fixed and table.highs[i] > low:
        low = table.highs[i]  # wall times below were already shown: second occurrences
    while True:
        end = table.starts[i + 1] if i + 1 < len(table.starts) else table.end
        wall = spec.first_match(low, end + offset)
        if wall is not None:
            return wall - offset
        i += 1
        if i == len(table.starts):
            chunk_index += 1
            if chunk_index * _CHUNK >= _LAST_TS:
                return None
            table = timeline.chunk(chunk_index)
            i = 0
        start, offset, high = table.starts[i], table.offsets[i], table.highs[i]
        low = start + offset
        if fixed:
            if high < low and spec.first_match(high, low) is not None:
                return start  # a matching wall time was jumped over: fire right after the gap
            low = max(low, high)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def validate_timezone(name: str) -> ZoneInfo:
    """Return the zone for an IANA name, or raise ScheduleExpressionError(field="timezone")."""
    if not isinstance(name, str) or not name.strip():
        raise ScheduleExpressionError(
            "timezone", "timezone must be an IANA name such as 'Europe/Berlin'"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleExpressionError(
            "timezone", f"unknown timezone {name!r}; use an IANA name such as 'Europe/Berlin'"
        ) from None


def _instant(value: datetime | None, name: str) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ScheduleExpressionError(name, f"{name} must include a timezone offset")
    return value.astimezone(UTC)


def _ceil_seconds(value: datetime) -> int:
    return math.ceil(value.timestamp())


@dataclass(frozen=True, slots=True)
class Recurrence:
    """A compiled cron or rate schedule with its timezone and bounds.

    Build it with :func:`compile_recurrence`. Instants in and out are timezone-aware; results
    are UTC datetimes on whole seconds.
    """

    kind: Literal["cron", "rate"]
    expression: str
    timezone: str
    zone: ZoneInfo
    seed: str
    start_at: datetime | None
    end_at: datetime | None
    anchor: datetime | None
    _cron: _CronSpec | None = field(repr=False, compare=False)
    _period: int = field(repr=False, compare=False)
    _origin: int = field(repr=False, compare=False)
    _floor: int = field(repr=False, compare=False)
    _ceiling: int = field(repr=False, compare=False)

    @property
    def is_fixed_time(self) -> bool:
        """True for cron schedules whose minute and hour fields do not start with ``*``.

        These follow the fixed-time half of the DST rule (gap times shifted, repeats once).
        Rates are never fixed-time.
        """
        return self._cron is not None and self._cron.fixed_time

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire instant strictly after ``after``, or None when the schedule is over."""
        if after.tzinfo is None:
            raise ScheduleExpressionError("after", "after must include a timezone offset")
        fire = self._next_ts(math.floor(after.timestamp()))
        return None if fire is None else datetime.fromtimestamp(fire, UTC)

    def iter_after(self, after: datetime) -> Iterator[datetime]:
        """Fire instants strictly after ``after`` in increasing order, until ``end_at``."""
        if after.tzinfo is None:
            raise ScheduleExpressionError("after", "after must include a timezone offset")
        current: int | None = math.floor(after.timestamp())
        while current is not None:
            current = self._next_ts(current)
            if current is not None:
                yield datetime.fromtimestamp(current, UTC)

    def local_time(self, instant: datetime) -> datetime:
        """The instant as wall-clock time in the schedule's zone (for previews)."""
        return instant.astimezone(self.zone)

    def matches_local(self, wall: datetime) -> bool:
        """Whether a wall-clock time (its fields read as-is) matches the five cron fields.

        Ignores the DST rule, seconds and the bounds; always False for a rate.
        """
        return self._cron is not None and self._cron.matches_wall(wall)

    def _next_ts(self, after: int) -> int | None:
        after = max(after, self._floor)
        if self._cron is not None:
            fire = _next_cron_fire(self._cron, _timeline(self.zone), after)
        elif after < self._origin:
            fire = self._origin
        else:
            fire = self._origin + ((after - self._origin) // self._period + 1) * self._period
        return fire if fire is not None and fire <= self._ceiling else None


@lru_cache(maxsize=_CACHE_SIZE)
def _compile(
    cron: str | None,
    rate: str | None,
    timezone: str,
    seed: str,
    start_at: datetime | None,
    end_at: datetime | None,
    anchor: datetime | None,
) -> Recurrence:
    zone = validate_timezone(timezone)
    if (cron is None) == (rate is None):
        raise ScheduleExpressionError("cron", "exactly one of cron or rate is required")
    start = _instant(start_at, "start_at")
    end = _instant(end_at, "end_at")
    origin_at = _instant(anchor, "anchor")
    if start is not None and end is not None and end <= start:
        raise ScheduleExpressionError("end_at", "end_at must be later than start_at")
    floor = _FIRST_TS if start is None else max(_FIRST_TS, _ceil_seconds(start) - 1)
    ceiling = _LAST_TS if end is None else min(_LAST_TS, math.floor(end.timestamp()))
    spec: _CronSpec | None = None
    period = origin = 0
    if cron is not None:
        spec = _cron_spec(cron, seed)
        kind: Literal["cron", "rate"] = "cron"
        expression = cron
    else:
        assert rate is not None
        period = _rate_period(rate)
        phase = start if start is not None else origin_at
        origin = 0 if phase is None else _ceil_seconds(phase)
        kind, expression = "rate", rate
    return Recurrence(
        kind=kind,
        expression=expression,
        timezone=timezone,
        zone=zone,
        seed=seed,
        start_at=start,
        end_at=end,
        anchor=origin_at,
        _cron=spec,
        _period=period,
        _origin=origin,
        _floor=floor,
        _ceiling=ceiling,
    )


def compile_recurrence(
    *,
    cron: str | None = None,
    rate: str | None = None,
    timezone: str = "UTC",
    seed: str = "",
    start_at: datetime | None = None,
    end_at: datetime | None = None,
    anchor: datetime | None = None,
) -> Recurrence:
    """Validate and compile a schedule; cached, so calling it per tick is cheap.

    Exactly one of ``cron`` and ``rate`` is given. ``seed`` (the schedule id) drives ``H``
    hashing. ``start_at``/``end_at`` bound the fires (both inclusive). A rate fires at
    ``start_at + k * period``, or ``anchor + k * period`` without ``start_at`` (pass the
    schedule's ``created_at``), or on multiples of the period since 1970-01-01T00:00Z without
    either; a sub-second phase is rounded up to the next whole second.

    Raises ScheduleExpressionError naming the field at fault.
    """
    return _compile(cron, rate, timezone, seed, start_at, end_at, anchor)


def jitter_offset_s(seed: str, scheduled_for: datetime, jitter_s: int) -> int:
    """Deterministic delay in [0, jitter_s] seconds for one occurrence of a schedule.

    The same (seed, scheduled_for, jitter_s) always gives the same delay, so a retried tick
    enqueues the same due time; different occurrences and schedules spread over the window.
    The occurrence keeps ``scheduled_for`` as its nominal instant; jitter only delays the run.
    """
    if isinstance(jitter_s, bool) or not isinstance(jitter_s, int):
        raise ScheduleExpressionError("jitter_s", "jitter_s must be an integer number of seconds")
    if not 0 <= jitter_s <= MAX_JITTER_S:
        raise ScheduleExpressionError(
            "jitter_s", f"jitter_s must be between 0 and {MAX_JITTER_S}, got {jitter_s}"
        )
    if scheduled_for.tzinfo is None:
        raise ScheduleExpressionError(
            "scheduled_for", "scheduled_for must include a timezone offset"
        )
    if jitter_s == 0:
        return 0
    micros = (scheduled_for - _EPOCH) // timedelta(microseconds=1)
    digest = hashlib.sha256(f"cronwheel:jitter\x1f{seed}\x1f{micros}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (jitter_s + 1)
