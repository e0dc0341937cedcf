"""Broken on purpose (check no-direct-io): opens a file itself instead of using the store."""

from __future__ import annotations

import os
from typing import Any

from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="reads-files-directly", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def peek(engine: Any, event: Any, call_next: Any) -> Any:
        with open(os.devnull, encoding="utf-8") as handle:  # noqa: ASYNC230 (the bug shown)
            handle.read()
        return await call_next(event)

    on("tool.call", peek)
