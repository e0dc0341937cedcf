"""Deeply read-only JSON-like values: what an event's mappings and sequences are made of.

A `FrozenMap` is a `dict` and a `FrozenList` a `list` (so `json`, pydantic serialisation and
`isinstance(x, dict)` / `isinstance(x, list)` work as before) whose every mutating method
refuses; tuples stay tuples, sets become frozensets. What Python cannot stop
(`dict.__setitem__(m, ...)`, `object.__setattr__(event, ...)`) is outside the contract: see
docs/contract.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(
        "event values are read-only; to change what downstream sees, pass a changed copy "
        "to call_next (event.model_copy(update={...})), or change the result "
        "(e.g. ToolResult.updated_input)"
    )


class _Shared:
    """Copies of a read-only value are the value itself."""

    __slots__ = ()

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self


class FrozenMap(_Shared, dict[str, Any]):
    """A read-only dict: reads, iteration, `==`, `json.dumps` and `dict(m)` work; writes refuse."""

    __slots__ = ()

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> Any:
        return (freeze, (dict(self),))


class FrozenList(_Shared, list[Any]):
    """A read-only list: reads, slicing, `==`, `json.dumps` and `list(x)` work; writes refuse."""

    __slots__ = ()

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> Any:
        return (freeze, (list(self),))


_AS_IS = frozenset({str, int, float, bool, type(None), bytes})


def freeze(value: Any) -> Any:
    """`value` with every mapping a `FrozenMap`, list a `FrozenList`, set a frozenset, deeply."""
    kind = type(value)
    # Exact JSON types first (what events are made of): type checks, not ABC isinstance calls.
    if kind in _AS_IS or kind is FrozenMap or kind is FrozenList:
        return value
    # Scalars are tested inline: most values of an event are, and a call per value costs more.
    if kind is dict:
        return FrozenMap(
            {key: item if type(item) in _AS_IS else freeze(item) for key, item in value.items()}
        )
    if kind is list:
        return FrozenList([item if type(item) in _AS_IS else freeze(item) for item in value])
    if isinstance(value, Mapping):
        return FrozenMap({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList([freeze(item) for item in value])
    if isinstance(value, tuple):
        items = tuple(freeze(item) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(item) for item in value)
    return value
