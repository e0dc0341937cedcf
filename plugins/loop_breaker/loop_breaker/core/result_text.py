"""What the core reads of a tool result: its text, or nothing where none of it is read."""

from __future__ import annotations

from typing import Any

from .normalize import EDIT_TOOLS, NEVER_COUNTED_TOOLS, SIBLING_CANCELLED, output_text

_SCALARS = frozenset({int, float, bool, type(None)})
_INT_LIMIT = 10**4000
"""Beyond this an int has too many digits to write: `output_text` decides what happens then."""
_MAX_DEPTH = 32


def result_text(tool: str, output: Any, *, is_error: bool) -> str:
    """`output_text(output)`, or "" where the core would read nothing of it.

    The core never reads the output of a tool it does not count, and reads a successful edit's
    only for the sibling-cancel marker near its start: its outcome is the file state it leaves.
    A structured result that holds the marker in none of its strings cannot show it, so it is
    not encoded at all (encoding a large edit result costs more than the whole detection).
    """
    if tool in NEVER_COUNTED_TOOLS:
        return ""
    if is_error or tool not in EDIT_TOOLS or type(output) is not dict or _may_show(output, 0):
        return output_text(output)
    return ""


def _may_show(value: Any, depth: int) -> bool:
    """Whether the text of `value` may hold the marker (True for anything unusual)."""
    kind = type(value)
    if kind is str:
        return SIBLING_CANCELLED in value
    if kind in _SCALARS:
        return kind is int and not -_INT_LIMIT < value < _INT_LIMIT
    if depth >= _MAX_DEPTH:
        return True
    if kind is dict:
        for key in value:
            key_kind = type(key)
            if key_kind is str:
                if SIBLING_CANCELLED in key:
                    return True
            elif key_kind not in _SCALARS:
                return True
        items: Any = value.values()
    elif kind is list or kind is tuple:
        items = value
    else:
        return True
    if set(map(type, items)) <= {str}:
        # The marker has no newline, so joining cannot make one across two strings.
        return SIBLING_CANCELLED in "\n".join(items)
    return any(_may_show(item, depth + 1) for item in items)
