"""A minimal agent loop that embeds the hookchain host: a scripted model, real tools.

Run it with `python examples/agent_loop.py [WORKDIR]`. Every event of the session goes through
the installed plugins: the model's steps stream through `turn.step`, each tool call through
`tool.call` (whose terminal really runs the tool), and what the plugins added is printed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from framework import (
    Host,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    StreamChunk,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnStart,
    TurnStep,
)


@dataclass(frozen=True, slots=True)
class Step:
    """One scripted model step: some text, then tool calls (or none, to end the turn)."""

    text: str
    calls: Sequence[tuple[str, dict[str, Any]]] = ()


SCRIPT = (
    Step("Let me look around.", [("Bash", {"command": "ls"})]),
    Step("I'll write a note.", [("Write", {"file_path": "notes.txt", "content": "hello\n"})]),
    Step("Checking it.", [("Bash", {"command": "cat notes.txt"})]),
    Step("Done: notes.txt holds the greeting."),
)


@dataclass
class Tools:
    """The harness's own tools: they run for real inside `workdir`."""

    workdir: Path
    log: list[str] = field(default_factory=list)

    async def run(self, event: ToolCall) -> ToolResult:
        if event.tool == "Bash":
            done = await anyio.to_thread.run_sync(
                lambda: subprocess.run(
                    event.input["command"],
                    shell=True,
                    cwd=self.workdir,
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=False,
                )
            )
            output = done.stdout + done.stderr
            return ToolResult(output=output, is_error=done.returncode != 0)
        if event.tool == "Write":
            target = self.workdir / event.input["file_path"]
            target.write_text(event.input["content"], encoding="utf-8")
            return ToolResult(output=f"wrote {target.name}")
        return ToolResult(output=f"unknown tool {event.tool}", is_error=True)


async def stream(step: Step) -> AsyncIterator[StreamChunk]:
    yield StreamChunk(kind="text", text=step.text)
    for index, (tool, tool_input) in enumerate(step.calls):
        yield StreamChunk(kind="tool_use", data={"index": index, "tool": tool, "input": tool_input})
    yield StreamChunk(kind="stop", stop_reason="tool_use" if step.calls else "end_turn")


async def run_session(
    host: Host, workdir: Path, script: Sequence[Step] = SCRIPT, session_id: str = "demo"
) -> list[str]:
    """Drive one session through the host; returns what happened, line by line."""
    tools = Tools(workdir)
    lines: list[str] = []
    await host.dispatch(SessionStart(session_id=session_id, cwd=str(workdir)))
    prompt = await host.dispatch(
        PromptSubmit(session_id=session_id, text="Write a greeting into notes.txt")
    )
    if prompt.result.drop is not None:
        return [f"prompt dropped by {prompt.result.drop.by}: {prompt.result.drop.reason}"]
    await host.dispatch(TurnStart(session_id=session_id, turn_id="turn-1"))
    for number, step in enumerate(script):
        event = TurnStep(session_id=session_id, turn_id="turn-1", step_index=number)

        async def model(event: TurnStep, step: Step = step) -> AsyncIterator[StreamChunk]:
            return stream(step)

        outcome = await host.dispatch(event, model)
        async for chunk in outcome.result:
            if chunk.kind == "text":
                lines.append(f"model: {chunk.text}")
            elif chunk.kind == "tool_use":
                lines.extend(await call_tool(host, tools, session_id, number, chunk))
        lines.extend(describe(host.take_pending(session_id)))
    done = await host.dispatch(TurnComplete(session_id=session_id, turn_id="turn-1"))
    if done.result.continuation is not None:
        lines.append(f"asked to continue by {done.result.continuation.by}")
    await host.dispatch(SessionEnd(session_id=session_id, reason="exit"))
    return lines


async def call_tool(
    host: Host, tools: Tools, session_id: str, step: int, chunk: StreamChunk
) -> list[str]:
    call = ToolCall(
        session_id=session_id,
        tool_use_id=f"toolu_{step}_{chunk.data['index']}",
        tool=chunk.data["tool"],
        input=chunk.data["input"],
    )
    outcome = await host.dispatch(call, tools.run)
    result = outcome.result
    if result.denial is not None:
        shown = f"{call.tool} denied by {result.denial.by}: {result.denial.reason}"
    else:
        shown = f"{call.tool} -> {str(result.output).strip()[:60]!r}"
    return [f"tool: {shown}", *describe(outcome.actions)]


def describe(actions: Sequence[Any]) -> list[str]:
    return [f"  [{action.by}] {action.kind}: {action.text[:100]}" for action in actions]


async def main(argv: Sequence[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="hookchain-agent-") as scratch:
        workdir = Path(argv[0]) if argv else Path(scratch)
        async with Host(store="memory://") as host:
            loaded = [plugin.name for plugin in host.loaded()]
            print(f"plugins: {', '.join(loaded) or 'none installed'}")
            for line in await run_session(host, workdir):
                print(line)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
