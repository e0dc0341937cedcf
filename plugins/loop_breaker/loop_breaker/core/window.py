"""Per-loop windows: the calls since the person's last prompt and each edited file's states."""

from __future__ import annotations

from dataclasses import dataclass, field

from .normalize import digest
from .types import MAIN_LOOP, CallRecord

WINDOW_CAP = 30
"""Calls kept per loop; older ones fall out."""

MAX_LOOPS = 8
"""Loops tracked at once: the main loop plus up to seven subagents."""

FILE_HISTORY_CAP = 20
UNKNOWN_ORIGIN = "origin"
MAX_TRACKED_FILES = 20
HELD_OUTPUT_CHARS = 64 * 1024
"""Characters of outputs a loop's records may hold for fingerprints not read yet; a successful
call's fingerprint is computed at once rather than take more."""


@dataclass(slots=True)
class LoopWindow:
    """One loop's recent calls plus the content states each edited file went through."""

    records: list[CallRecord] = field(default_factory=list)
    file_states: dict[str, FileHistory] = field(default_factory=dict)
    epoch: int = 0
    seq: int = 0
    touched_ms: int = 0
    held_chars: int = 0
    """What the records' pending fingerprints hold at most: their outputs' characters."""

    def append(self, record: CallRecord) -> None:
        self.records.append(record)
        self.held_chars += record.fingerprint.held_chars
        if len(self.records) > WINDOW_CAP:
            self.held_chars -= self.records[0].fingerprint.held_chars
            del self.records[0]
        self.touched_ms = record.at_ms

    def has_trouble(self) -> bool:
        return any(record.outcome != "ok" for record in self.records)

    def apply_edit(self, file: str, transition: tuple[str, str, str]) -> tuple[bool, bool]:
        """Moves `file` to its next state; returns (changed, reverted to an earlier state)."""
        kind, first, second = transition
        history = self.file_states.get(file)
        if history is None:
            # The content before the first edit is unknown but real: an undo can return to it.
            history = self.file_states[file] = FileHistory([UNKNOWN_ORIGIN])
            if len(self.file_states) > MAX_TRACKED_FILES:
                del self.file_states[next(iter(self.file_states))]
        current = history.states[-1] if history.states else UNKNOWN_ORIGIN
        if kind == "write":
            state = first
        elif first == second:
            return (False, False)
        else:
            state = history.after_edit(current, first, second)
        if state and state == current:
            return (False, False)
        reverted = state in history.states
        history.states.append(state)
        if len(history.states) > FILE_HISTORY_CAP:
            del history.states[0]
        self.epoch += 1
        return (True, reverted)


@dataclass(slots=True)
class FileHistory:
    """The abstract content states of one file and the edits that moved between them."""

    states: list[str] = field(default_factory=list)
    moves: list[tuple[str, str, str, str]] = field(default_factory=list)

    def after_edit(self, current: str, old: str, new: str) -> str:
        # Edit content is not known, so states are abstract: `x→y` then `y→x` lands on the start.
        for before, moved_old, moved_new, after in reversed(self.moves):
            if after == current and moved_old == new and moved_new == old:
                return before
        state = digest(f"{current}|{old}>{new}")
        self.moves.append((current, old, new, state))
        if len(self.moves) > FILE_HISTORY_CAP:
            del self.moves[0]
        return state


class Windows:
    """The tracked loops: the main loop is never evicted, healthy subagent loops go first."""

    def __init__(self) -> None:
        self.loops: dict[str, LoopWindow] = {}

    def get(self, loop_id: str, now_ms: int) -> tuple[LoopWindow, list[str]]:
        """The loop's window (created if new) and the loop ids evicted to make room."""
        window = self.loops.get(loop_id)
        if window is not None:
            return window, []
        evicted: list[str] = []
        while len(self.loops) >= MAX_LOOPS:
            victim = self._victim()
            if victim is None:
                break
            del self.loops[victim]
            evicted.append(victim)
        window = self.loops[loop_id] = LoopWindow(touched_ms=now_ms)
        return window, evicted

    def _victim(self) -> str | None:
        candidates = [
            (window.has_trouble(), window.touched_ms, loop_id)
            for loop_id, window in self.loops.items()
            if loop_id != MAIN_LOOP
        ]
        return min(candidates)[2] if candidates else None

    def reset_all(self, now_ms: int) -> None:
        """The person spoke: every loop starts a fresh window."""
        for loop_id in list(self.loops):
            self.loops[loop_id] = LoopWindow(touched_ms=now_ms)
