"""Log records in the store: a key per record, text fields, the newest kept in insertion order."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

LOG_PREFIX = "log:"
ORDER_KEY = "log-order"
"""The insertion order of record keys; the pre-0.1 `log` array key is neither read nor counted."""


def record_key(moment_ms: float | None, number: str, label: str) -> str:
    """`log:<time>:<n>:<label>`; an unknown time is `null`."""
    time_part = "null" if moment_ms is None else str(int(moment_ms))
    return f"{LOG_PREFIX}{time_part}:{number}:{label}"


def as_text(value: object) -> str | None:
    """A field as stored text; None and empty values are left out of the record."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        return None
    return text or None


def record_fields(moment_ms: float | None, fields: Mapping[str, object]) -> dict[str, str | None]:
    """The stored record: every field as text, empty ones dropped, `time` null when unknown."""
    record: dict[str, str | None] = {"time": as_text(moment_ms)}
    for name, value in fields.items():
        text = as_text(value)
        if text is not None:
            record[name] = text
    return record


def append_key(order: object, key: str, keep: int) -> tuple[list[str], list[str]]:
    """Add `key` to the stored order; return the order to store and the keys that fell off."""
    current = [item for item in order if isinstance(item, str)] if isinstance(order, list) else []
    current.append(key)
    overflow = max(0, len(current) - keep)
    return current[overflow:], current[:overflow]


def unique_evictions(evicted: Sequence[str], kept: Sequence[str]) -> list[str]:
    """Keys safe to delete: evicted and not (somehow) still kept."""
    still = set(kept)
    return [key for key in evicted if key not in still]
