"""Broken on purpose (check deterministic): keeps module state, so each load adds a handler."""

from __future__ import annotations

from typing import Any

from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="registers-more-each-load", contract=">=1,<2")

_loads: list[int] = []


@hookimpl
def register(on: Any, options: Any) -> None:
    async def passthrough(engine: Any, event: Any, call_next: Any) -> Any:
        return await call_next(event)

    _loads.append(len(_loads))
    for _ in _loads:
        on("tool.call", passthrough)
