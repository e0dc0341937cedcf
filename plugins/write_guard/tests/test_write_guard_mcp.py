"""MCP tools with path arguments are decided by resolved path, like Write.

The payloads are shaped as Claude Code sends them (`mcp__<server>__<tool>`, the tool's own
arguments as `tool_input`) and mapped by the Claude Code bridge's own mapping; the tool names
and arguments are those of the reference filesystem and git MCP servers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from framework import Host, SessionStart, ToolCall, ToolResult
from write_guard._options import Options
from write_guard._surface import McpPaths, extract_surface

import write_guard

pytestmark = pytest.mark.anyio


def payload(tool: str, tool_input: dict[str, Any], cwd: Path) -> dict[str, Any]:
    return {
        "session_id": "s",
        "transcript_path": str(cwd / "t.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
    }


@pytest.fixture(autouse=True)
def no_extra_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    # The temp dir (an extra root by default) holds the test's "outside" folder too.
    monkeypatch.setenv("WRITE_GUARD_EXTRA_WRITABLE_ROOTS", "[]")


async def decided(tmp_path: Path, tool: str, tool_input: dict[str, Any]) -> Any:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True, exist_ok=True)
    (ws / ".git" / "config").write_text("")
    sent = payload(tool, tool_input, ws)
    # What the Claude Code bridge makes of a PreToolUse payload.
    call = ToolCall(
        session_id=sent["session_id"],
        tool_use_id=sent["tool_use_id"],
        tool=sent["tool_name"],
        input=sent["tool_input"],
    )

    async def terminal(event: ToolCall) -> ToolResult:
        return ToolResult(output="ran")

    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    environ = {"HOME": str(home), "CLAUDE_PROJECT_DIR": str(ws)}
    async with Host(plugins=[write_guard], entry_points=False, env=environ) as host:
        await host.dispatch(SessionStart(session_id="s", cwd=str(ws)))
        outcome = await host.dispatch(call, terminal=terminal)
    return outcome.result


@pytest.mark.parametrize(
    ("tool", "arguments", "rule"),
    [
        ("mcp__filesystem__write_file", {"path": "{out}/x", "content": "x"}, "outside-roots"),
        ("mcp__filesystem__edit_file", {"path": "../x", "edits": []}, "outside-roots"),
        ("mcp__filesystem__create_directory", {"path": "/etc/cron.d/x"}, "outside-roots"),
        ("mcp__filesystem__move_file", {"source": "a", "destination": "{out}/a"}, "outside-roots"),
        ("mcp__filesystem__move_file", {"source": "{out}/a", "destination": "a"}, "outside-roots"),
        ("mcp__filesystem__write_file", {"path": ".git/config", "content": "x"}, "protected-path"),
        ("mcp__git__git_init", {"repo_path": "{out}"}, "outside-roots"),
        ("mcp__plugin_x_files__save", {"file_paths": ["ok.txt", "{out}/y"]}, "outside-roots"),
        ("mcp__files__Write-File", {"File_Path": "{out}/x"}, "outside-roots"),
    ],
)
async def test_an_mcp_write_outside_or_to_a_protected_path_is_denied(
    tmp_path: Path, tool: str, arguments: dict[str, Any], rule: str
) -> None:
    out = str(tmp_path / "outside")
    filled = {
        k: [i.replace("{out}", out) for i in v] if isinstance(v, list) else v.replace("{out}", out)
        for k, v in arguments.items()
    }
    result = await decided(tmp_path, tool, filled)
    assert result.denial is not None, result
    assert rule in result.denial.reason


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("mcp__filesystem__write_file", {"path": "notes/x.md", "content": "x"}),
        ("mcp__filesystem__move_file", {"source": "a", "destination": "b"}),
        ("mcp__filesystem__read_file", {"path": "/etc/hosts"}),
        ("mcp__filesystem__list_directory", {"path": "/usr"}),
        ("mcp__filesystem__search_files", {"path": "/", "pattern": "*.py"}),
        ("mcp__memory__create_entities", {"entities": [{"name": "/etc/passwd"}]}),
        ("mcp__github__create_issue", {"title": "see /etc/passwd", "body": "x"}),
    ],
)
async def test_an_mcp_call_inside_a_read_or_no_path_argument_is_allowed(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    result = await decided(tmp_path, tool, arguments)
    assert result.denial is None, result.denial
    assert result.output == "ran"


async def test_mcp_path_arguments_can_be_switched_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arguments = {"path": str(tmp_path / "outside" / "x"), "content": "x"}
    assert (await decided(tmp_path, "mcp__filesystem__write_file", arguments)).denial is not None
    monkeypatch.setenv("WRITE_GUARD_MCP_PATH_ARGUMENTS", "[]")
    assert (await decided(tmp_path, "mcp__filesystem__write_file", arguments)).denial is None


def test_the_argument_names_and_read_verbs_are_options() -> None:
    options = Options(mcp_path_arguments=["where"], mcp_read_verbs=["peek"])
    mcp = options.mcp_paths()
    assert mcp == McpPaths(arguments=("where",), read_verbs=("peek",))
    surface = extract_surface("mcp__s__put", {"where": "/x", "path": "/y"}, mcp)
    assert [t.path for t in surface.targets] == ["/x"]
    assert not extract_surface("mcp__s__peek", {"where": "/x"}, mcp).targets
    assert not extract_surface("mcp__s__put", {"where": "/x"}).targets  # not decided
