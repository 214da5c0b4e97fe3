"""Instants on the wire: RFC 3339, normalised to UTC with a `Z`."""

from __future__ import annotations

from datetime import UTC, datetime

from cronwheel.errors import InvalidArgument


def parse_instant(value: str, *, field: str) -> datetime:
    """Parse an RFC 3339 instant with an explicit offset and return it in UTC."""
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise InvalidArgument(
            f"{value!r} is not an RFC 3339 instant (e.g. 2026-09-26T09:00:00Z)", field=field
        ) from None
    if parsed.tzinfo is None:
        raise InvalidArgument(
            f"{value!r} has no UTC offset; add 'Z' or an offset such as +02:00", field=field
        )
    return parsed.astimezone(UTC)


def format_instant(value: datetime) -> str:
    """UTC with a `Z`; milliseconds only when the instant has a fraction of a second."""
    utc = value.astimezone(UTC)
    spec = "milliseconds" if utc.microsecond else "seconds"
    return utc.replace(tzinfo=None).isoformat(timespec=spec) + "Z"
