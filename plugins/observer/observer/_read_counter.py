"""The read counter: when a person last read the log, and whether it has gone unread too long."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from observer._log_file import replace_private_file

COUNTER_FILE = ".read-counter.json"
WEEK_MS = 7 * 24 * 60 * 60 * 1000


class ReadCounter(BaseModel):
    """How often the log was read, when last, and since when the observer has been watching."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reads: int = Field(default=0, ge=0)
    last_read_ms: int | None = None
    first_seen_ms: int
    last_reminded_ms: int | None = None


def record_read(counter: ReadCounter, now_ms: int) -> ReadCounter:
    """`counter` after one more read at `now_ms`."""
    return counter.model_copy(update={"reads": counter.reads + 1, "last_read_ms": now_ms})


def unread_for_too_long(counter: ReadCounter, now_ms: int, weeks: int) -> bool:
    """Whether `weeks` have passed since the last read (or since watching began, if never read)."""
    since = counter.last_read_ms if counter.last_read_ms is not None else counter.first_seen_ms
    return now_ms - since >= weeks * WEEK_MS


def reminder_due(counter: ReadCounter, now_ms: int, weeks: int) -> bool:
    """Unread for too long, and not already reminded within the last day."""
    if not unread_for_too_long(counter, now_ms, weeks):
        return False
    return counter.last_reminded_ms is None or now_ms - counter.last_reminded_ms >= WEEK_MS // 7


def reminder_text(counter: ReadCounter, now_ms: int) -> str:
    """The toast shown at session start when the log has gone unread."""
    since = counter.last_read_ms if counter.last_read_ms is not None else counter.first_seen_ms
    weeks = (now_ms - since) // WEEK_MS
    return (
        f"The observer log has not been read for {weeks} weeks. Run `hookchain observer status` "
        "or `hookchain observer dashboard`, or stop the observer if nobody uses its evidence."
    )


def load_counter(data_dir: Path, now_ms: int) -> ReadCounter:
    """The stored counter, or a fresh one starting now when the file is missing or unreadable."""
    try:
        raw = (data_dir / COUNTER_FILE).read_text(encoding="utf-8")
        return ReadCounter.model_validate_json(raw)
    except (OSError, ValueError, ValidationError):
        return ReadCounter(first_seen_ms=now_ms)


def save_counter(data_dir: Path, counter: ReadCounter, *, durable: bool = True) -> None:
    """Replace the counter file in one step; `durable=False` only for a sandboxed host."""
    payload = json.dumps(counter.model_dump()).encode("utf-8")
    replace_private_file(data_dir, COUNTER_FILE, payload, durable=durable)


def note_read(data_dir: Path, now_ms: int) -> ReadCounter:
    """Record that a person read the log now; returns the stored counter."""
    counter = record_read(load_counter(data_dir, now_ms), now_ms)
    save_counter(data_dir, counter)
    return counter
