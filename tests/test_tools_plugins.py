"""The shipped plugins act the same whatever the harness names its tools (contract 1.1).

write-guard must refuse a Gemini `write_file` outside the workspace exactly as it refuses a Claude
Code `Write`; until it reads `ToolCall.action` instead of Claude Code's tool names, the Gemini
case is a strict xfail, so the day it does the marker has to go.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from framework import Host, SessionStart, ToolCall, ToolResult

write_guard = pytest.importorskip("write_guard")


async def _ran(terminal_log: list[str], event: ToolCall) -> ToolResult:
    terminal_log.append(event.tool_use_id)
    return ToolResult(output="written")


def _guarded_write(tmp_path: Path, harness: str, tool: str, tool_input: dict[str, Any]) -> Any:
    workspace, outside, home = (tmp_path / name for name in ("ws", "outside", "home"))
    for folder in (workspace, outside, home):
        folder.mkdir()
    ran: list[str] = []

    async def main() -> ToolResult:
        async with Host(
            plugins=[write_guard],
            entry_points=False,
            store="memory://",
            env={"HOME": str(home), "CLAUDE_PROJECT_DIR": str(workspace)},
            options={"write-guard": {"extra_writable_roots": []}},
        ) as host:
            await host.dispatch(SessionStart(session_id="s", harness=harness, cwd=str(workspace)))
            call = ToolCall(
                session_id="s",
                harness=harness,
                tool_use_id="t1",
                tool=tool,
                input={k: v.format(out=outside) for k, v in tool_input.items()},
            )
            outcome = await host.dispatch(call, lambda event: _ran(ran, event))
            assert isinstance(outcome.result, ToolResult)
            return outcome.result

    result = anyio.run(main)
    return result, ran


def test_claude_code_write_outside_the_workspace_is_denied(tmp_path: Path) -> None:
    result, ran = _guarded_write(
        tmp_path, "claude-code", "Write", {"file_path": "../outside/x.txt", "content": "x"}
    )
    assert result.denial is not None and ran == []


@pytest.mark.xfail(
    strict=True,
    reason="write-guard reads Claude Code's tool names (Write/Edit/…), not ToolCall.action.writes",
)
def test_gemini_write_file_outside_the_workspace_is_denied_the_same(tmp_path: Path) -> None:
    result, ran = _guarded_write(
        tmp_path, "gemini", "write_file", {"file_path": "../outside/x.txt", "content": "x"}
    )
    assert result.denial is not None and ran == []


@pytest.mark.xfail(
    strict=True,
    reason="write-guard reads Claude Code's tool names (Bash), not ToolCall.action.command",
)
def test_gemini_shell_write_outside_the_workspace_is_denied_the_same(tmp_path: Path) -> None:
    result, ran = _guarded_write(
        tmp_path, "gemini", "run_shell_command", {"command": "echo x > {out}/x.txt"}
    )
    assert result.denial is not None and ran == []


def test_gemini_write_file_inside_the_workspace_runs(tmp_path: Path) -> None:
    result, ran = _guarded_write(
        tmp_path, "gemini", "write_file", {"file_path": "notes.md", "content": "x"}
    )
    assert result.denial is None and ran == ["t1"]
