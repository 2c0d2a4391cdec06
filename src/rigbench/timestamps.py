"""Timestamps as stored: UTC, ISO 8601, whole seconds. One definition for every layer."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    """Now, e.g. `2026-11-23T04:12:31+00:00`."""
    return datetime.now(UTC).isoformat(timespec="seconds")
