"""The TaskStop window after a refusal: opening marks, clock answers in any order, decisions."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

WINDOW_MS = 1_800_000
"""A TaskStop this long (or longer) after the newest known refusal is no longer linked to it."""


class Verdict(enum.Enum):
    """What a TaskStop's entry says about the window."""

    OUTSIDE = "outside"
    INSIDE = "inside"
    ASK_CLOCK = "ask-clock"


@dataclass(frozen=True, slots=True)
class EntryDecision:
    """The verdict at a TaskStop's entry; with ASK_CLOCK, the end the clock is held against."""

    verdict: Verdict
    window_end: float | None = None
    inside_if_clock_fails: bool = False

    def settle(self, clock_ms: float | None) -> bool:
        """Whether the stop counts as inside, given the engine clock's answer (None: it failed)."""
        if self.verdict is Verdict.INSIDE:
            return True
        if self.verdict is Verdict.OUTSIDE:
            return False
        if clock_ms is None or self.window_end is None:
            return self.inside_if_clock_fails
        return clock_ms < self.window_end


@dataclass(slots=True)
class RefusalWindow:
    """Refusals of one session in the order they were recognised, and what the window makes of them.

    A refusal is *begun* when recognised (it sets an opening mark, stamped with local time) and
    *settled* when the clock answers (or fails). Clock answers may arrive in any order: the window
    ends `WINDOW_MS` after the greatest known refusal time, and an unknown time keeps the end
    unknown until a refusal begun after it settles with a known time.
    """

    _next_seq: int = 0
    _marks: dict[int, float | None] = field(default_factory=dict)
    _settled_any: bool = False
    _newest_known_time: float | None = None
    _newest_known_seq: int = -1
    _newest_unknown_seq: int = -1

    def begin(self, local_ms: float | None) -> int:
        """Open a mark for a recognised refusal; the returned number settles it."""
        seq = self._next_seq
        self._next_seq += 1
        self._marks[seq] = local_ms
        return seq

    def settle(self, seq: int, moment_ms: float | None) -> None:
        """The refusal's time is settled (known or not): its mark gives way to the window."""
        self._marks.pop(seq, None)
        self._settled_any = True
        if moment_ms is None:
            self._newest_unknown_seq = max(self._newest_unknown_seq, seq)
            return
        self._newest_known_seq = max(self._newest_known_seq, seq)
        if self._newest_known_time is None or moment_ms > self._newest_known_time:
            self._newest_known_time = moment_ms

    def drop_mark(self, seq: int) -> None:
        """Remove a mark without settling (its refusal belongs to a session that has ended)."""
        self._marks.pop(seq, None)

    @property
    def has_window(self) -> bool:
        return self._settled_any

    @property
    def end_known(self) -> bool:
        return self._newest_unknown_seq < self._newest_known_seq

    @property
    def window_end(self) -> float | None:
        """Where the window ends; None while it has no known end (or there is no window)."""
        if not self._settled_any or not self.end_known or self._newest_known_time is None:
            return None
        return self._newest_known_time + WINDOW_MS

    @property
    def newest_time(self) -> float | None:
        """The newest known refusal time: the status line's "last"."""
        return self._newest_known_time

    def active_marks(self, local_ms: float | None) -> int:
        """Sweep marks local time has carried a full window past, and count the rest.

        A mark with an unknown stamp, or an unknown `local_ms`, never expires by time; a local clock
        set back never revives or removes a mark.
        """
        if local_ms is not None:
            expired = [
                seq
                for seq, stamp in self._marks.items()
                if stamp is not None and local_ms - stamp >= WINDOW_MS
            ]
            for seq in expired:
                del self._marks[seq]
        return len(self._marks)

    def decide_entry(self, local_ms: float | None) -> EntryDecision:
        """A TaskStop enters: decide from local time alone where that suffices."""
        if self.active_marks(local_ms):
            return EntryDecision(Verdict.INSIDE)
        if not self._settled_any:
            return EntryDecision(Verdict.OUTSIDE)
        end = self.window_end
        if end is None:
            return EntryDecision(Verdict.INSIDE)
        if local_ms is not None and local_ms < end:
            return EntryDecision(Verdict.INSIDE)
        return EntryDecision(
            Verdict.ASK_CLOCK, window_end=end, inside_if_clock_fails=local_ms is None
        )
