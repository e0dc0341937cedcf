"""Small helpers for the host's own tests: plugins made from a register function."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from framework import PluginInfo, ToolCall, ToolResult, hookimpl


def make_plugin(
    name: str,
    register: Callable[..., None],
    *,
    contract: str = ">=1,<2",
    options: type | None = None,
) -> types.ModuleType:
    """A plugin module whose `register(on, options)` calls `register(on)` (or with options)."""
    module = types.ModuleType(name.replace("-", "_"))
    module.plugin = PluginInfo(name=name, contract=contract, options=options)  # type: ignore[attr-defined]

    @hookimpl
    def register_hook(on: Any, options: Any) -> None:
        if options is None:
            register(on)
        else:
            register(on, options)

    register_hook.__name__ = "register"
    module.register = register_hook  # type: ignore[attr-defined]
    return module


def bash(command: str = "ls", *, tool_use_id: str = "t1", session_id: str = "s1") -> ToolCall:
    return ToolCall(
        session_id=session_id, tool_use_id=tool_use_id, tool="Bash", input={"command": command}
    )


class Terminal:
    """A scripted terminal that counts its runs."""

    def __init__(self, result: Any = None, *, error: BaseException | None = None) -> None:
        self.result = ToolResult(output="done") if result is None else result
        self.error = error
        self.runs = 0
        self.seen: list[Any] = []

    async def __call__(self, event: Any) -> Any:
        self.runs += 1
        self.seen.append(event)
        if self.error is not None:
            raise self.error
        return self.result
