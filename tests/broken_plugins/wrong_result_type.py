"""Broken on purpose (check valid-result): answers a tool call with a plain dict."""

from __future__ import annotations

from typing import Any

from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="wrong-result-type", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def as_dict(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        return {"output": result.output}

    on("tool.call", as_dict)
