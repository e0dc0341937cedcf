"""The plugin's options (LOOP_BREAKER_* and the [loop-breaker] table) and their core config."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

from .core.types import CoreConfig, Thresholds

IGNORE_ENTRY_MAX_LENGTH = 200
IGNORE_ENTRY_MAX_COUNT = 50


class Options(BaseSettings):
    """Every threshold of every detector, the per-turn nudge budget, auto-stop and ignores."""

    enabled: bool = True
    auto_stop: bool = False
    stop_after_escalation: int = Field(default=2, ge=1)
    max_nudges_per_turn: int = Field(default=2, ge=0)
    ignore: list[str] = Field(default_factory=list)
    debug: bool = False

    env_blocker_span: int = Field(default=10, ge=1)
    env_blocker_nudge_at: int = Field(default=2, ge=1)
    env_blocker_escalate_at: int = Field(default=4, ge=1)
    denied_retry_nudge_at: int = Field(default=2, ge=1)
    denied_retry_escalate_at: int = Field(default=3, ge=1)
    repeat_failure_nudge_at: int = Field(default=3, ge=1)
    repeat_failure_escalate_at: int = Field(default=5, ge=1)
    same_error_nudge_at: int = Field(default=3, ge=1)
    same_error_escalate_at: int = Field(default=5, ge=1)
    edit_thrash_nudge_at: int = Field(default=2, ge=1)
    edit_thrash_escalate_at: int = Field(default=4, ge=1)
    cycle_nudge_at: int = Field(default=3, ge=2)
    cycle_escalate_at: int = Field(default=5, ge=2)
    idle_repeat_nudge_at: int = Field(default=3, ge=2)
    idle_repeat_escalate_at: int = Field(default=5, ge=2)
    poll_nudge_at: int = Field(default=4, ge=2)
    poll_escalate_at: int = Field(default=12, ge=2)
    stop_block_alert_at: int = Field(default=3, ge=1)


def accepted_ignores(entries: list[str]) -> tuple[tuple[str, ...], int]:
    """The usable ignore entries and how many were refused (empty, overlong or beyond the cap)."""
    kept = [
        entry.strip()
        for entry in entries
        if entry.strip() and len(entry.strip()) <= IGNORE_ENTRY_MAX_LENGTH
    ]
    refused = len(entries) - len(kept)
    if len(kept) > IGNORE_ENTRY_MAX_COUNT:
        refused += len(kept) - IGNORE_ENTRY_MAX_COUNT
        kept = kept[:IGNORE_ENTRY_MAX_COUNT]
    return tuple(kept), refused


def core_config(options: Options) -> tuple[CoreConfig, int]:
    """The core's config from the options, and the number of ignore entries refused."""
    ignores, refused = accepted_ignores(options.ignore)
    pairs = {
        "env-blocker": (options.env_blocker_nudge_at, options.env_blocker_escalate_at),
        "denied-retry": (options.denied_retry_nudge_at, options.denied_retry_escalate_at),
        "repeat-failure": (options.repeat_failure_nudge_at, options.repeat_failure_escalate_at),
        "same-error": (options.same_error_nudge_at, options.same_error_escalate_at),
        "edit-thrash": (options.edit_thrash_nudge_at, options.edit_thrash_escalate_at),
        "cycle": (options.cycle_nudge_at, options.cycle_escalate_at),
        "idle-repeat": (options.idle_repeat_nudge_at, options.idle_repeat_escalate_at),
        "poll": (options.poll_nudge_at, options.poll_escalate_at),
        "stop-block": (options.stop_block_alert_at, options.stop_block_alert_at),
    }
    thresholds = {
        # An escalation below the nudge would skip the nudge; the nudge count wins.
        detector: Thresholds(nudge_at, max(nudge_at, escalate_at))
        for detector, (nudge_at, escalate_at) in pairs.items()
    }
    config = CoreConfig(
        thresholds=thresholds,
        env_blocker_span=options.env_blocker_span,
        max_nudges_per_turn=options.max_nudges_per_turn,
        auto_stop=options.auto_stop,
        stop_after_escalation=options.stop_after_escalation,
        ignore=ignores,
    )
    return config, refused
