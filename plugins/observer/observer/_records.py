"""The log's line types (schema v3): episodes, outcome lines and observer_error markers.

Readers also take v2 lines, which are v3 without `environment.harness`.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION: Final = 3
SchemaVersion = Literal[2, 3]
"""The versions a reader takes; lines are written with `SCHEMA_VERSION`."""

Provenance = Literal["user_directed_method", "autonomous"]
OutcomeValue = Literal["success", "failure", "abandoned"]
SizeBucket = Literal["none", "small", "medium", "large"]
LengthBucket = Literal["empty", "short", "medium", "long"]

NO_NODE = "none"
"""The node of a turn that no skill, command or agent handled."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DecisionProvenance(_Frozen):
    """Who chose the node: the person (a dictated method) or the model on its own."""

    provenance: Provenance
    counterfactual: str | None = None
    source: Literal["routing_tag", "prompt", "none"] = "none"


class Environment(_Frozen):
    """What the turn ran in; a field is None when the harness did not say."""

    harness: str | None = None
    """The harness the turn ran in (`Event.harness`); None on a v2 line."""
    model: str | None = None
    post_compaction: bool = False
    session_turn: int = Field(ge=1)
    parallel_session: bool = False
    economy_level: str | None = None


class TaskSize(_Frozen):
    """How much work the turn did, counted from tool calls (never their content)."""

    tool_calls: int = Field(ge=0)
    edits: int = Field(ge=0)
    files_touched: int = Field(ge=0)
    bucket: SizeBucket


class PromptSignal(_Frozen):
    """Content-free facts about the person's prompt of the turn."""

    length_bucket: LengthBucket
    correction: bool = False
    correction_cues: tuple[str, ...] = ()


class Episode(_Frozen):
    """One main-loop turn. Written once; its outcome is refined by later outcome lines."""

    record: Literal["episode"] = "episode"
    schema_version: SchemaVersion = SCHEMA_VERSION
    id: str
    ts: str
    session_id: str
    turn_id: str
    node: str
    decision_provenance: DecisionProvenance
    environment: Environment
    task_size: TaskSize
    task_ref: str | None = None
    prompt_signal: PromptSignal
    outcome: Literal["unknown"] = "unknown"


class OutcomeLine(_Frozen):
    """A later verdict on an episode; the newest line for an episode wins."""

    record: Literal["outcome"] = "outcome"
    schema_version: SchemaVersion = SCHEMA_VERSION
    episode_id: str
    outcome: OutcomeValue
    ts: str


class ObserverErrorMarker(_Frozen):
    """Written instead of an episode when the observer itself failed; names only the error type."""

    record: Literal["observer_error"] = "observer_error"
    schema_version: SchemaVersion = SCHEMA_VERSION
    ts: str
    session_id: str | None = None
    turn_id: str | None = None
    stage: str
    error_type: str


_DAY_MS = 24 * 60 * 60 * 1000
_EXACT_UNTIL_MS = 2**32 * 1000


def iso_timestamp(ms: int) -> str:
    """Milliseconds since the epoch as an ISO 8601 UTC timestamp with millisecond precision."""
    global _last_day
    day_ms, date = _last_day
    offset = ms - day_ms
    if 0 <= offset < _DAY_MS:
        # Lines of one day follow one another: the date is kept and the time of day is counted
        # out of the milliseconds (tests hold this equal to the datetime form).
        seconds, millis = divmod(offset, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return f"{date}T{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"
    text = _datetime_timestamp(ms)
    start = ms - ms % _DAY_MS
    # Up to 2106 a millisecond survives the float division exactly, so both forms agree.
    if 0 <= start < _EXACT_UNTIL_MS and _datetime_timestamp(start) == f"{text[:10]}T00:00:00.000Z":
        _last_day = (start, text[:10])
    return text


def _datetime_timestamp(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# A real day to start from: an empty date would make the first day of 1970 lose its date.
_last_day: tuple[int, str] = (0, "1970-01-01")


def new_episode_id() -> str:
    """A random (version 4) UUID in its usual text form, as `str(uuid.uuid4())` gives it."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def size_bucket(tool_calls: int, files_touched: int) -> SizeBucket:
    """A coarse size: none (no tools), small (≤ 5 calls, ≤ 2 files), medium (≤ 25, ≤ 10), large."""
    if tool_calls == 0:
        return "none"
    if tool_calls <= 5 and files_touched <= 2:
        return "small"
    if tool_calls <= 25 and files_touched <= 10:
        return "medium"
    return "large"


def length_bucket(length: int) -> LengthBucket:
    """A prompt's length in characters as empty (0), short (< 80), medium (< 600) or long."""
    if length == 0:
        return "empty"
    if length < 80:
        return "short"
    if length < 600:
        return "medium"
    return "long"
