"""Registrations: one handler on one event, validated once when a plugin registers it."""

from __future__ import annotations

import functools
import operator
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from framework.core.contract import REFUSABLE_EVENTS, ContractError, FailMode, event_type

Handler = Callable[[Any, Any, Any], Awaitable[Any]]
Fallback = Callable[[Any, Any, BaseException, Any], Awaitable[Any]]
Matcher = Callable[[Any], bool]


class BudgetExceeded(Exception):
    """A handler spent more of its own time than its budget allows."""


class Registration:
    """One handler attached to one event by one plugin."""

    __slots__ = (
        "budget",
        "event",
        "fail",
        "fallback",
        "handler",
        "match",
        "match_spec",
        "order",
        "plugin",
        "sequence",
    )

    def __init__(
        self,
        *,
        plugin: str,
        event: str,
        handler: Handler,
        match: Matcher | None,
        match_spec: Mapping[str, Any] | None,
        order: int,
        fail: FailMode,
        budget: float | None,
        sequence: int,
    ) -> None:
        self.plugin = plugin
        self.event = event
        self.handler = handler
        self.match = match
        self.match_spec = match_spec
        self.order = order
        self.fail = fail
        self.budget = budget
        self.sequence = sequence
        self.fallback: Fallback | None = None

    def catch(self, fallback: Fallback) -> Registration:
        """Replace the default recovery with `fallback(engine, event, error, call_next)`."""
        self.fallback = fallback
        return self

    @property
    def sort_key(self) -> tuple[int, str, int]:
        return (self.order, self.plugin, self.sequence)

    @property
    def handler_name(self) -> str:
        return getattr(self.handler, "__qualname__", repr(self.handler))

    def __repr__(self) -> str:
        return (
            f"Registration({self.plugin}:{self.handler_name} on {self.event}, "
            f"order={self.order}, fail={self.fail})"
        )


def compile_match(plugin: str, event: str, spec: Mapping[str, Any] | None) -> Matcher | None:
    """Turn `{"tool": {"Bash"}}` into a predicate; unknown fields are a registration error."""
    if not spec:
        return None
    model = event_type(event)
    tests: list[tuple[str, Callable[[Any], bool]]] = []
    for field_name, wanted in spec.items():
        if field_name not in model.model_fields:
            fields = ", ".join(sorted(model.model_fields))
            raise ContractError(
                f"plugin {plugin!r}: on({event!r}, match=...) names unknown field {field_name!r}; "
                f"fields of {event}: {fields}"
            )
        if callable(wanted):
            tests.append((field_name, wanted))
        elif isinstance(wanted, Collection) and not isinstance(wanted, (str, bytes)):
            allowed = frozenset(wanted)
            tests.append((field_name, allowed.__contains__))
        else:
            # operator.eq, not wanted.__eq__: None.__eq__("x") is NotImplemented, which is truthy.
            tests.append((field_name, functools.partial(operator.eq, wanted)))

    if len(tests) == 1:
        ((name, test),) = tests
        if not callable(spec[name]):
            # A set's `__contains__` and `operator.eq` answer a bool already.
            return lambda event_value: test(getattr(event_value, name))
        return lambda event_value: bool(test(getattr(event_value, name)))
    return lambda event_value: all(test(getattr(event_value, name)) for name, test in tests)


def make_registration(
    *,
    plugin: str,
    event: str,
    handler: Handler,
    match: Mapping[str, Any] | None,
    order: int,
    fail: FailMode,
    budget: float | None,
    sequence: int,
) -> Registration:
    """Validate one `on(...)` call and build its registration."""
    event_type(event)  # unknown events are refused here, not at dispatch
    if not callable(handler):
        raise ContractError(f"plugin {plugin!r}: on({event!r}, ...) needs an async handler")
    if fail not in ("open", "closed"):
        raise ContractError(f"plugin {plugin!r}: fail={fail!r} on {event}; use 'open' or 'closed'")
    if fail == "closed" and event not in REFUSABLE_EVENTS:
        raise ContractError(
            f"plugin {plugin!r}: fail='closed' on {event!r} has no refusal to fall back to; "
            f"only {', '.join(sorted(REFUSABLE_EVENTS))} accept it"
        )
    if budget is not None and budget <= 0:
        raise ContractError(f"plugin {plugin!r}: budget on {event} must be positive seconds")
    return Registration(
        plugin=plugin,
        event=event,
        handler=handler,
        match=compile_match(plugin, event, match),
        match_spec=match,
        order=order,
        fail=fail,
        budget=budget,
        sequence=sequence,
    )
