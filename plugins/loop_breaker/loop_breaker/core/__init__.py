"""Pure detection core of loop-breaker: no engine calls, only values in and decisions out."""

from __future__ import annotations

from .session import LoopBreakerCore
from .types import (
    DETECTOR_IDS,
    MAIN_LOOP,
    CallRecord,
    CoreConfig,
    Decision,
    Observation,
    Signal,
    Thresholds,
)

__all__ = [
    "DETECTOR_IDS",
    "MAIN_LOOP",
    "CallRecord",
    "CoreConfig",
    "Decision",
    "LoopBreakerCore",
    "Observation",
    "Signal",
    "Thresholds",
]
