"""What a call's input says of it (its action key and label, an edit's transition, whether its
command may change files) and what a failed call's text says (its `Failure`), kept per process
for inputs seen again: pure functions of the input, so a copy kept is the answer computed again.

A warm host sees the same calls again and again: a loop repeats its call, a person's sessions
run the same commands, auto-stop asks a call's key before it runs and the record after. An
action key of a long input costs its whitespace collapsed and hashed (tens of microseconds for
a written file); a lookup costs the input's hash. Only inputs of exact str, int, bool and None
values are kept (a float's `-0.0` equals `0.0` but is written otherwise; a nested value would
need a deep key), each with the type of each value in its key (`1 == True`, written otherwise),
up to `MAX_INPUT_CHARS` characters each and `MAX_KEPT_CHARS` in all, `MAX_KEPT` inputs at
most: the least recently used go first. A failure is kept by the tail of the text it is read
from (at most `OUTPUT_TAIL_CHARS`), `MAX_FAILURES` of them: a failing command, a denying hook and
a Stop hook's feedback say the same again and again, within a session and across sessions, and
reading one costs a scan of its lines by many patterns (0.6M instructions for a 281-character
Stop feedback naming long paths).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping
from functools import lru_cache
from typing import Any

from .normalize import (
    EDIT_TOOLS,
    Failure,
    action_key,
    edit_transition,
    failure_of,
    label_of,
    may_change_files,
    tail,
)

MAX_KEPT = 1024
MAX_INPUT_CHARS = 64 * 1024
MAX_KEPT_CHARS = 4 * 1024 * 1024
MAX_COMMAND_CHARS = 16 * 1024
MAX_COMMANDS = 1024
MAX_FAILURES = 256

_KEYED_KINDS = frozenset({str, int, bool, type(None)})


class _Kept:
    """A bounded LRU of answers by key, each of a size."""

    __slots__ = ("_entries", "chars", "max_chars", "max_entries")

    def __init__(self, max_entries: int, max_chars: int) -> None:
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.max_entries = max_entries
        self.max_chars = max_chars
        self.chars = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Any:
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        return found[0]

    def put(self, key: Hashable, value: Any, chars: int) -> None:
        entries = self._entries
        if key in entries:
            return
        entries[key] = (value, chars)
        self.chars += chars
        while len(entries) > self.max_entries or self.chars > self.max_chars:
            _, (_, dropped) = entries.popitem(last=False)
            self.chars -= dropped

    def clear(self) -> None:
        self._entries.clear()
        self.chars = 0


_CALLS = _Kept(MAX_KEPT, MAX_KEPT_CHARS)
# Commands and failure tails are bounded in size before they are kept, so their count bounds
# their characters: a plain LRU of the function is enough.
_COMMANDS = lru_cache(maxsize=MAX_COMMANDS)(may_change_files)
_FAILURES = lru_cache(maxsize=MAX_FAILURES)(failure_of)


def _input_key(tool: str, tool_input: Mapping[str, Any]) -> tuple[Hashable, int] | None:
    """The memo key of a call (its tool, each field with its value's exact type) and the
    characters it holds, or None when the input is not one kept."""
    fields: list[tuple[str, type, Any]] = []
    chars = 0
    for name, value in tool_input.items():
        kind = type(value)
        if kind is str:
            chars += len(value)
        elif kind not in _KEYED_KINDS:
            return None
        if type(name) is not str:
            return None
        fields.append((name, kind, value))
    if chars > MAX_INPUT_CHARS or type(tool) is not str:
        return None
    return (tool, tuple(fields)), chars


Transition = tuple[str, str, str]
"""What an edit does to its file (`edit_transition`)."""


def call_facts(tool: str, tool_input: Mapping[str, Any]) -> tuple[str, str, Transition | None]:
    """`(action_key(…), label_of(…), edit_transition(…))` of a call, kept for inputs seen again;
    the transition only for an edit tool's kept input (None otherwise: computed where needed).

    An edit's transition hashes its old and new text (or a whole written file), which a loop
    repeating the edit sends again: kept with the call's key, it costs nothing more to find."""
    keyed = _input_key(tool, tool_input)
    if keyed is None:
        return action_key(tool, tool_input), label_of(tool, tool_input), None
    memo_key, chars = keyed
    known: tuple[str, str, Transition | None] | None = _CALLS.get(memo_key)
    if known is None:
        transition = edit_transition(tool, tool_input) if tool in EDIT_TOOLS else None
        known = (action_key(tool, tool_input), label_of(tool, tool_input), transition)
        _CALLS.put(memo_key, known, chars)
    return known


def key_and_label(tool: str, tool_input: Mapping[str, Any]) -> tuple[str, str]:
    """`(action_key(tool, tool_input), label_of(tool, tool_input))`, kept for inputs seen again."""
    key, label, _ = call_facts(tool, tool_input)
    return key, label


def key_of(tool: str, tool_input: Mapping[str, Any]) -> str:
    """`action_key(tool, tool_input)`, kept for inputs seen again."""
    return call_facts(tool, tool_input)[0]


def changes_files(command: str) -> bool:
    """`may_change_files(command)`, kept for commands seen again."""
    if len(command) > MAX_COMMAND_CHARS or type(command) is not str:
        return may_change_files(command)
    return _COMMANDS(command)


def failure(text: str) -> Failure:
    """`failure_of(text)`, kept by the tail of `text` it reads, for failures seen again."""
    return _FAILURES(tail(text))


def forget_all() -> None:
    """Every kept answer dropped (for measuring the cost of calls seen for the first time)."""
    _CALLS.clear()
    _COMMANDS.cache_clear()
    _FAILURES.cache_clear()
