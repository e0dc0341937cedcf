"""The shipped plugins act the same whatever the harness names its tools (contract 1.1).

write-guard must refuse a Gemini `write_file` outside the workspace exactly as it refuses a Claude
Code `Write`: it reads another harness's calls through `ToolCall.action`.
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
        folder.mkdir(parents=True)
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


def test_gemini_write_file_outside_the_workspace_is_denied_the_same(tmp_path: Path) -> None:
    result, ran = _guarded_write(
        tmp_path, "gemini", "write_file", {"file_path": "../outside/x.txt", "content": "x"}
    )
    assert result.denial is not None and ran == []


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


@pytest.mark.parametrize("harness", ["gemini", "codex"])
def test_another_harness_gets_no_rewritten_command_and_the_analysis_fails_closed(
    tmp_path: Path, harness: str
) -> None:
    # Gemini CLI drops `updatedInput` and Codex's handling of it is unproven: a bwrap-wrapped
    # command would run unwrapped there without a word, so no rewrite is offered and the line
    # analysis decides instead, refusing what it cannot read.
    tool = "run_shell_command" if harness == "gemini" else "Bash"
    plain, ran = _guarded_write(tmp_path / "plain", harness, tool, {"command": "echo x > in.txt"})
    assert plain.denial is None and plain.updated_input is None and ran == ["t1"]
    # A line the analysis cannot read that runs no git (the git gate holds an `eval` first).
    unreadable = {"command": "echo x | tee >(cat > f) >/dev/null"}
    unread, ran = _guarded_write(tmp_path / "unread", harness, tool, unreadable)
    assert unread.denial is not None and ran == []
    assert "no-sandbox" in unread.denial.reason


def test_claude_code_gets_its_command_confined_when_bubblewrap_is_here(tmp_path: Path) -> None:
    if write_guard._sandbox.probe("auto").bwrap is None:
        pytest.skip("no usable bubblewrap on this machine")
    wrapped, ran = _guarded_write(tmp_path, "claude-code", "Bash", {"command": "echo x > in.txt"})
    assert wrapped.denial is None and ran == ["t1"]
    assert wrapped.updated_input is not None and "bwrap" in wrapped.updated_input["command"]
