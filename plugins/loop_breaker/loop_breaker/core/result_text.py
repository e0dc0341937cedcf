"""What the core reads of a tool result: its text, or only the start of it that is read."""

from __future__ import annotations

import json
from typing import Any

from .normalize import (
    DENIAL_HEAD_CHARS,
    EDIT_TOOLS,
    NEVER_COUNTED_TOOLS,
    OUTPUT_TAIL_CHARS,
    output_text,
)

HEAD_CHARS = 80
"""The start of a successful call's text that the core reads (the sibling-cancel marker)."""

LONG_STRING = DENIAL_HEAD_CHARS + OUTPUT_TAIL_CHARS + 1024
"""A string longer than this in a structured result is written with its middle left out."""

_SCALARS = frozenset({int, float, bool, type(None)})
_INT_LIMIT = 10**4000
"""Beyond this an int has too many digits to write: `output_text` decides what happens then."""
_NEGATIVE_INT_LIMIT = -_INT_LIMIT  # negated once, not per int checked
_ONLY_STR = frozenset({str})
_MAX_DEPTH = 32
_SHORT = 1024
_INFINITY = float("inf")
# The encoder `output_text` uses, built once.
_dumps = json.JSONEncoder(sort_keys=True, default=str).encode


def result_text(tool: str, output: Any, *, is_error: bool) -> str:
    """`output_text(output)`, or as much of it as the core reads.

    The core never reads the output of a tool it does not count, and reads a successful edit's
    structured result only for the sibling-cancel marker in its first `HEAD_CHARS`
    characters: an edit's outcome is the file state it leaves. Those characters are encoded
    piece by piece, exactly as `json.dumps(output, sort_keys=True, default=str)` begins; the
    rest of the result (a whole file and its patch) is never encoded. Anything unusual in the
    result (other types, keys that are not strings, deep nesting) takes `output_text` itself.

    Any other text is read only in its first `DENIAL_HEAD_CHARS` characters (the cancel,
    interrupt and refusal markers) and its last `OUTPUT_TAIL_CHARS` (the fingerprints). A
    structured result holding a string longer than `LONG_STRING` (a whole file read, a
    subagent's report) is written with that string's middle left out: escaping is per
    character, so the text agrees with the full one in every character the core reads.
    """
    if tool in NEVER_COUNTED_TOOLS:
        return ""
    kind = type(output)
    if is_error or tool not in EDIT_TOOLS or kind is not dict:
        if kind is dict or kind is list or kind is tuple:
            shortened = _without_middles(output, 0)
            if shortened is not output:
                try:
                    return _dumps(shortened)
                except (TypeError, ValueError):
                    pass  # as the full result would fail: `output_text` decides
        return output_text(output)
    sizes: dict[int, int] = {}
    if _plain_chars(output, 0, sizes) < 0:
        return output_text(output)
    head, whole = _prefix(output, HEAD_CHARS, sizes)
    return head if whole else head[:HEAD_CHARS]


def text_and_source(tool: str, output: Any, *, is_error: bool) -> tuple[str, Any, int]:
    """`result_text(tool, output, is_error=is_error)`, or less when the rest can wait.

    A successful call's text feeds its head checks and its fingerprint, and the fingerprint is
    rarely read. So for a counted tool that is not an edit, with a plain dict output (exact JSON
    types, string keys, writable ints, not too deep: its text is its JSON, which starts with
    `{"`), only the first `HEAD_CHARS` characters are encoded, exactly as that text begins;
    the output itself is returned as the source to build the rest from, with the count of
    characters in its strings. Otherwise the source is None and the text whole.
    """
    if is_error or type(output) is not dict or tool in EDIT_TOOLS or tool in NEVER_COUNTED_TOOLS:
        return result_text(tool, output, is_error=is_error), None, 0
    sizes: dict[int, int] = {}
    chars = _plain_chars(output, 0, sizes)
    if chars < 0:
        return result_text(tool, output, is_error=False), None, 0
    head, whole = _prefix(output, HEAD_CHARS, sizes)
    if whole:
        # Every string in it was written whole, none long enough to lose its middle: this is
        # the text `result_text` gives.
        return head, None, 0
    return head[:HEAD_CHARS], output, chars


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


def _plain_chars(value: Any, depth: int, sizes: dict[int, int]) -> int:
    """The characters of the strings in `value` (keys included), or -1 unless it is made of
    exact JSON types with string keys and writable ints, at most `_MAX_DEPTH` deep.

    `sizes` receives the count of each container met, by `id`.
    """
    kind = type(value)
    if kind is str:
        return len(value)
    if kind in _SCALARS:
        return -1 if kind is int and not _NEGATIVE_INT_LIMIT < value < _INT_LIMIT else 0
    if depth >= _MAX_DEPTH or (kind is not dict and kind is not list and kind is not tuple):
        return -1
    total = 0
    items: Any = value
    if kind is dict:
        if not set(map(type, value)) <= _ONLY_STR:
            return -1
        total = sum(map(len, value))
        items = value.values()
    if set(map(type, items)) <= _ONLY_STR:
        total += sum(map(len, items))
    else:
        for item in items:
            item_kind = type(item)
            if item_kind is str:
                total += len(item)
            elif item_kind is int:
                # Checked here rather than in a call of its own: results hold many counts.
                if not _NEGATIVE_INT_LIMIT < item < _INT_LIMIT:
                    return -1
            elif item_kind in _SCALARS:
                continue
            else:
                chars = _plain_chars(item, depth + 1, sizes)
                if chars < 0:
                    return -1
                total += chars
    sizes[id(value)] = total
    return total


def _prefix(value: Any, need: int, sizes: dict[int, int]) -> tuple[str, bool]:
    """At least the first `need` (> 0) characters of the JSON text of a plain `value`, and
    whether that is the whole text. A container's text is its children's joined, so the
    children are encoded from the first one on until enough is there."""
    kind = type(value)
    if kind is str:
        if len(value) < need:
            return _dumps(value), True
        # Escaping is per character: the first `need` characters give at least `need` back.
        return _dumps(value[:need])[:-1], False
    if kind is not dict and kind is not list and kind is not tuple:
        return _scalar(value), True
    if sizes.get(id(value), _SHORT) < _SHORT:
        return _dumps(value), True  # little text in it: one encoding is cheaper than pieces
    is_dict = kind is dict
    keys = sorted(value) if is_dict else range(len(value))
    parts = []
    size = 0
    for index, key in enumerate(keys):
        lead = ("{" if is_dict else "[") if index == 0 else ", "
        if is_dict:
            lead += _dumps(key) + ": "
        parts.append(lead)
        size += len(lead)
        if size >= need:
            return "".join(parts), False
        text, whole = _prefix(value[key], need - size, sizes)
        parts.append(text)
        size += len(text)
        if not whole or (size >= need and index < len(keys) - 1):
            return "".join(parts), False
    parts.append("}" if is_dict else "]")
    return "".join(parts), True


def _scalar(value: Any) -> str:
    """What json writes for an exact int, float, bool or None (its `floatstr`, `int.__repr__`)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return int.__repr__(value)
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)
