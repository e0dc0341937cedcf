"""`neutral_result` learns which event classes answer with a shared result: the same answers."""

from __future__ import annotations

import inspect
from typing import Any

from framework import (
    EVENT_TYPES,
    ContextResult,
    PromptResult,
    ToolCall,
    ToolResult,
    neutral_result,
)
from framework.core.contract import _neutral_of

FIELDS: dict[str, Any] = {
    "session_id": "s",
    "turn_id": "t",
    "text": "hello",
    "blocks": (),
    "tool": "Bash",
    "input": {"command": "ls"},
    "tool_use_id": "u1",
    "hook_name": "Notification",
    "payload": {},
}


class MyToolCall(ToolCall):
    """A subclass: answered as a ToolCall, with a result of its own each time."""


def answers(event: Any) -> tuple[Any, Any]:
    """What the learning function says (asked twice: the second answer may be the learnt one)
    and what the plain isinstance chain says."""
    neutral_result(event)
    return neutral_result(event), _neutral_of(event, "")


def test_every_event_class_gets_the_answer_of_the_isinstance_chain() -> None:
    for cls in {*EVENT_TYPES.values(), MyToolCall}:
        event = cls.model_construct(**FIELDS)
        learnt, plain = answers(event)
        if inspect.isasyncgen(plain):
            assert inspect.isasyncgen(learnt) and learnt is not plain, cls  # a stream each time
        elif plain is None or not isinstance(plain, ToolResult | PromptResult | ContextResult):
            assert learnt is plain, cls  # shared (or none): the very same object
        else:
            assert learnt == plain and learnt is not plain, cls  # made anew for every call
            assert neutral_result(event) is not neutral_result(event), cls
    # A subclass is answered by its own class, never by what its base learnt.
    assert neutral_result(MyToolCall.model_construct(**FIELDS), "out").output == "out"
