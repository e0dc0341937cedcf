"""The control: touches every kind of event correctly, so every check passes for it."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic_settings import BaseSettings

from framework import CommandReply, PluginInfo, ToolResult, hookimpl, tap


class Options(BaseSettings):
    limit: int = 3
    watched: frozenset[str] = frozenset({"Bash", "Edit"})


plugin = PluginInfo(name="well-behaved", contract=">=1,<2", options=Options)


@hookimpl
def register(on: Any, options: Options) -> None:
    async def count_then_note(engine: Any, event: Any, call_next: Any) -> Any:
        with anyio.move_on_after(0.05):
            await engine.store.update("calls", lambda n: n + 1, default=0)
        result = await call_next(event)
        if result.is_error:
            return result.with_note("Read the error before retrying.", by="well-behaved")
        return result

    async def refuse_force_push(engine: Any, event: Any, call_next: Any) -> Any:
        if "push --force" in str(event.input.get("command", "")):
            return ToolResult.denied("Force pushes are refused here.", by="well-behaved")
        return await call_next(event)

    async def drop_empty(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        if not result.text.strip():
            return result.dropped("An empty prompt was not sent.", by="well-behaved")
        return result

    async def add_context(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        return result.with_block("reminder", "Run the tests.", by="well-behaved")

    async def watch_step(engine: Any, event: Any, call_next: Any) -> Any:
        stream = await call_next(event)

        def remember(chunk: Any) -> None:
            engine.spawn(engine.state.set, "last", chunk.kind)

        return tap(stream, on_chunk=remember)

    async def keep_going(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        if event.reason == "max_tokens" and not event.stop_hook_active:
            return result.continued("Finish the sentence.", by="well-behaved")
        return result

    async def answer(engine: Any, event: Any, call_next: Any) -> Any:
        engine.ui.log("answered well-behaved", level="info")
        return CommandReply(text=f"limit is {options.limit}", by="well-behaved")

    async def observe(engine: Any, event: Any, call_next: Any) -> Any:
        where = "a sandbox" if engine.sandboxed else "the workspace"
        engine.ui.status(f"{event.name}: files in {engine.data_dir()} ({where})")
        return await call_next(event)

    on("tool.call", count_then_note, match={"tool": options.watched})
    on("tool.call", refuse_force_push, match={"tool": "Bash"}, order=-10, fail="closed")
    on("prompt.submit", drop_empty)
    on("prompt.context", add_context)
    on("turn.step", watch_step)
    on("turn.complete", keep_going)
    on("command.run", answer, match={"command": "well-behaved"})
    for name in ("session.start", "session.end", "turn.start", "classic.Notification"):
        on(name, observe)
