"""Time values: which clock answers count as a time, and how a moment shows in the status line."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

UNKNOWN_HHMM = "--:--"


def finite_ms(value: object) -> float | None:
    """A clock answer as milliseconds, or None when it is not a finite number (bools are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    as_float = float(value)
    return as_float if math.isfinite(as_float) else None


def hhmm(moment_ms: float | None) -> str:
    """Local HH:MM of a moment; an unknown or unrepresentable moment shows as --:--, never NaN."""
    if moment_ms is None or not math.isfinite(moment_ms):
        return UNKNOWN_HHMM
    try:
        return datetime.fromtimestamp(moment_ms / 1000).strftime("%H:%M")
    except (OverflowError, OSError, ValueError):
        return UNKNOWN_HHMM


def process_now_ms() -> float:
    """The process's own wall clock in milliseconds: the fallback when the engine clock fails."""
    return time.time_ns() / 1_000_000


@dataclass(frozen=True, slots=True)
class LocalReading:
    """One reading of the process's own clock: the milliseconds, or why there are none."""

    ms: float | None
    problem: str | None = None


def read_local(source: Callable[[], object]) -> LocalReading:
    """Read the local clock without letting it raise; a bad answer names its problem."""
    try:
        raw = source()
    except Exception as error:
        return LocalReading(None, f"local time failed ({type(error).__name__})")
    ms = finite_ms(raw)
    if ms is None:
        return LocalReading(None, "local time is not a finite number")
    return LocalReading(ms)
