"""A call's outcome fingerprint and cycle key; a successful call's is built on first read."""

from __future__ import annotations

from typing import Any

from .normalize import digest, steady_text, tail
from .result_text import result_text


def output_fp(tool: str, source: Any, *, poll: bool = False) -> str:
    """The fingerprint of a successful call's output: its text's tail, hashed. A poll's answer
    is read without its timestamps and durations: a status that says only when it was asked
    has not changed."""
    text = tail(result_text(tool, source))
    return digest(steady_text(text) if poll else text)


class Fingerprint:
    """What a call's outcome is to the detectors: `outcome_fp`, and `cycle_key` (the call's
    action key and `outcome_fp` together: what must repeat for a cycle).

    A successful call's fingerprint is read only when something compares it: a later call of the
    same action, a cycle check that found the same actions a period apart, an open loop's resolve
    rule, or a dump of the state. Most never are, so until then it is kept as the output it comes
    from (`of_output`); the first read hashes the tail of that output's text, exactly as it would
    have been hashed at once, and lets the output go.
    """

    __slots__ = (
        "_action_key",
        "_cycle_key",
        "_outcome_fp",
        "_poll",
        "_source",
        "_tool",
        "held_chars",
    )

    def __init__(self, outcome_fp: str, cycle_key: str) -> None:
        self._outcome_fp: str | None = outcome_fp
        self._cycle_key: str | None = cycle_key
        self._tool = ""
        self._poll = False
        self._action_key = ""
        self._source: Any = None
        # Characters of the output a pending fingerprint holds until it is read.
        self.held_chars = 0

    @classmethod
    def of_output(
        cls, tool: str, action_key: str, source: Any, held_chars: int, *, poll: bool = False
    ) -> Fingerprint:
        """The fingerprint of a successful call of `tool` whose output is `source` (its text, or a
        plain structured output `result_text` writes), computed when first read."""
        made = cls.__new__(cls)
        made._outcome_fp = made._cycle_key = None
        made._tool = tool
        made._poll = poll
        made._action_key = action_key
        made._source = source
        made.held_chars = held_chars
        return made

    @property
    def outcome_fp(self) -> str:
        known = self._outcome_fp
        if known is None:
            known = self._outcome_fp = output_fp(self._tool, self._source, poll=self._poll)
            self._source = None
        return known

    @property
    def cycle_key(self) -> str:
        known = self._cycle_key
        if known is None:
            known = self._cycle_key = f"{self._action_key}:{self.outcome_fp}"
        return known

    @property
    def pending(self) -> bool:
        """Whether the fingerprint is still to be computed from a held output."""
        return self._outcome_fp is None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fingerprint):
            return NotImplemented
        return self.outcome_fp == other.outcome_fp and self.cycle_key == other.cycle_key

    def __hash__(self) -> int:
        return hash((self.outcome_fp, self.cycle_key))

    def __repr__(self) -> str:
        return f"Fingerprint({self.outcome_fp!r}, {self.cycle_key!r})"
