"""What the core reads of a tool result: its text, or only the start of it that is read."""

from __future__ import annotations

import json
from itertools import repeat
from typing import Any

from .normalize import (
    DENIAL_HEAD_CHARS,
    EDIT_TOOLS,
    NEVER_COUNTED_TOOLS,
    OUTPUT_TAIL_CHARS,
    RUN_FIELDS,
    output_text,
)

LONG_STRING = DENIAL_HEAD_CHARS + OUTPUT_TAIL_CHARS + 1024
"""A string longer than this in a structured result is written with its middle left out."""

_SCALARS = frozenset({int, float, bool, type(None)})
_INT_LIMIT = 10**4000
"""Beyond this an int has too many digits to write: `output_text` decides what happens then."""
_NEGATIVE_INT_LIMIT = -_INT_LIMIT  # negated once, not per int checked
_ONLY_STR = frozenset({str})
_MAX_DEPTH = 32
_NO_KEYS = repeat("")
"""The keys of a list's items in `_plain_chars`' one loop: empty strings, none counted."""
# The encoder `output_text` uses, built once.
_dumps = json.JSONEncoder(sort_keys=True, default=str).encode


def result_text(tool: str, output: Any) -> str:
    """`output_text(output)`, or as much of it as the core reads, without a structured
    result's `RUN_FIELDS`.

    The core never reads the output of a tool it does not count. Any other text is read only in
    its first `DENIAL_HEAD_CHARS` characters (the cancel, interrupt and refusal markers of an
    error) and its last `OUTPUT_TAIL_CHARS` (the fingerprints). A structured result holding a
    string longer than `LONG_STRING` (a whole file read, a subagent's report) is written with
    that string's middle left out: escaping is per character, so the text agrees with the full
    one in every character the core reads.
    """
    if tool in NEVER_COUNTED_TOOLS:
        return ""
    kind = type(output)
    if kind is dict and not RUN_FIELDS.isdisjoint(output):
        # How the call ran (its duration, tokens, a subagent's id) is not what it returned.
        output = {name: value for name, value in output.items() if name not in RUN_FIELDS}
    if kind is dict or kind is list or kind is tuple:
        shortened = _without_middles(output, 0)
        if shortened is not output:
            try:
                return _dumps(shortened)
            except (TypeError, ValueError):
                pass  # as the full result would fail: `output_text` decides
    return output_text(output)


def text_and_source(tool: str, output: Any, *, is_error: bool) -> tuple[str, Any, int]:
    """What the core reads of a result now: its text, its fingerprint's source, that source's size.

    The interrupt and sibling-cancel notices are error results, so a successful call's text is
    read only for its fingerprint, which is rarely read. So nothing of a successful edit's
    result is built (its outcome is the file state it leaves), and a counted tool's successful
    plain dict output (exact JSON types, string keys, writable ints, not too deep, in the fields
    it writes: never its `RUN_FIELDS`) is returned as the source its text is built from when
    first needed, with the count of characters in the strings of those fields, and "" for the
    text. Otherwise the source is None and the text whole.
    """
    if is_error or tool in NEVER_COUNTED_TOOLS:
        return result_text(tool, output), None, 0
    if tool in EDIT_TOOLS:
        return "", None, 0
    if type(output) is not dict:
        return result_text(tool, output), None, 0
    chars = _plain_chars(output, 0)
    if chars < 0:
        return result_text(tool, output), None, 0
    return "", output, chars


def _without_middles(value: Any, depth: int) -> Any:
    """`value` with the middle of each string longer than `LONG_STRING` left out, keeping the
    ends the core reads; `value` itself if nothing was cut. Only the containers on the way to
    a cut are copied; exact dicts, lists and tuples are entered, at most `_MAX_DEPTH` deep."""
    kind = type(value)
    if kind is str:
        if len(value) <= LONG_STRING:
            return value
        return value[:DENIAL_HEAD_CHARS] + value[-OUTPUT_TAIL_CHARS:]
    if depth >= _MAX_DEPTH:
        return value
    if kind is dict:
        copied: dict[Any, Any] | None = None
        for key, item in value.items():
            item_kind = type(item)
            if (item_kind is str and len(item) <= LONG_STRING) or item_kind in _SCALARS:
                continue
            shortened = _without_middles(item, depth + 1)
            if shortened is not item:
                if copied is None:
                    copied = dict(value)
                copied[key] = shortened
        return value if copied is None else copied
    if kind is list or kind is tuple:
        items: list[Any] | None = None
        for index, item in enumerate(value):
            item_kind = type(item)
            if (item_kind is str and len(item) <= LONG_STRING) or item_kind in _SCALARS:
                continue
            shortened = _without_middles(item, depth + 1)
            if shortened is not item:
                if items is None:
                    items = list(value)
                items[index] = shortened
        return value if items is None else items
    return value


def _plain_chars(value: Any, depth: int) -> int:
    """The characters of the strings in `value` (keys included), or -1 unless it is made of
    exact JSON types with string keys and writable ints, at most `_MAX_DEPTH` deep; at the top
    (`depth` 0) a dict's `RUN_FIELDS` are passed over, as `result_text` never writes them.

    One loop over a dict's items (a list's items with "" for keys): results are dicts of a few
    mixed fields (a Task's report, a Read's file, a Bash run's streams and flags), where sets of
    their key and value types built first rarely spared the loop. A list or tuple of strings
    alone (a patch's lines) is counted in C."""
    kind = type(value)
    if kind is str:
        return len(value)
    if kind in _SCALARS:
        return -1 if kind is int and not _NEGATIVE_INT_LIMIT < value < _INT_LIMIT else 0
    if depth >= _MAX_DEPTH:
        return -1
    if kind is dict:
        items: Any = value.items()
        if depth == 0 and not RUN_FIELDS.isdisjoint(value):
            items = [(key, item) for key, item in items if key not in RUN_FIELDS]
    elif kind is list or kind is tuple:
        if set(map(type, value)) <= _ONLY_STR:
            return sum(map(len, value))
        items = zip(_NO_KEYS, value, strict=False)  # as long as `value`: `_NO_KEYS` never ends
    else:
        return -1
    total = 0
    for key, item in items:
        if type(key) is not str:
            return -1
        total += len(key)
        item_kind = type(item)
        if item_kind is str:
            total += len(item)
        elif item_kind is int:
            # Checked here rather than in a call of its own: results hold many counts.
            if not _NEGATIVE_INT_LIMIT < item < _INT_LIMIT:
                return -1
        elif item_kind not in _SCALARS:
            chars = _plain_chars(item, depth + 1)
            if chars < 0:
                return -1
            total += chars
    return total
