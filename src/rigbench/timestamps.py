"""Timestamps as stored: UTC, ISO 8601, whole seconds. One definition for every layer."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    """Now, e.g. `2026-11-23T04:12:31+00:00`."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_iso(text: str) -> datetime | None:
    """An ISO 8601 time as a UTC-aware datetime (a time without a zone is read as UTC), or None
    when `text` is not one: imported rows are ordered by it, so it must be one."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def not_a_time(text: str) -> str | None:
    """Why `text` is not an ISO 8601 time, for an import's refusal; None when it is one."""
    return None if parse_iso(text) is not None else f"not an ISO 8601 time, got {text[:80]!r}"
