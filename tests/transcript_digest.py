"""A digest of every rebuilt event of a transcript read, to pin the reader's output.

Turn ids are renamed in order of first appearance (`T1`, `T2`, …): the digest pins where turns
begin and end and which events they hold, not how an id is spelled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from framework.replay.rebuild import Session, Step

REPLAYED_HARNESS = "claude-code"
"""Every replayed event's `harness` (contract 1.1): checked here, and left out of the digest, so
the pins stay those of the reader's events as they were first pinned."""


def _dump(model: Any) -> Any:
    dumped = model.model_dump(mode="json")
    if isinstance(dumped, dict) and "harness" in dumped:
        assert dumped.pop("harness") == REPLAYED_HARNESS, dumped
    if isinstance(dumped, dict) and "permission_mode" in dumped:
        # A tool call's permission mode (contract 1.1) came later than the pins: left out of the
        # digest, checked against the records by test_transcript_reader.py.
        dumped.pop("permission_mode")
    return dumped


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return _dump(value)
    return value


def _steps(steps: Iterable[Step], turns: dict[str, str], depth: int) -> Iterable[Any]:
    for step in steps:
        event = _dump(step.event)
        turn = event.get("turn_id")
        if isinstance(turn, str):
            event["turn_id"] = turns.setdefault(turn, f"T{len(turns) + 1}")
        yield {
            "depth": depth,
            "event": event,
            "at_ms": step.at_ms,
            "chunks": [_dump(c) for c in step.chunks],
            "recorded": _plain(step.recorded),
            "continuation": step.continuation,
        }
        yield from _steps(step.subagent, turns, depth + 1)


def session_digest(session: Session) -> str:
    """sha256 of one session: its identity, times and every step in order, subagents nested."""
    turns: dict[str, str] = {}
    body = {
        "session_id": session.session_id,
        "first_ms": session.first_ms,
        "last_ms": session.last_ms,
        "merged_ids": list(session.merged_ids),
        "steps": list(_steps(session.steps, turns, 0)),
    }
    text = json.dumps(body, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digests(sessions: Iterable[Session]) -> list[list[str]]:
    """[file name, session id, digest] of each session, sorted: comparable across orders."""
    return sorted([s.path.rsplit("/", 1)[-1], s.session_id, session_digest(s)] for s in sessions)
