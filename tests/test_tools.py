"""Contract 1.1: the harness-neutral description of a tool call, and 1.0 plugins still loading."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostkit import make_plugin

from framework import (
    CONTRACT_VERSION,
    KNOWN_CONTRACT_VERSIONS,
    Host,
    HostSettings,
    SessionStart,
    ToolAction,
    ToolCall,
    ToolResult,
    describe_tool,
)
from framework.testing import load_vectors


def _vector_documents(version: str) -> list[dict[str, Any]]:
    folder = resources.files("framework.testing").joinpath("vectors", version)
    return [json.loads(entry.read_text("utf-8")) for entry in folder.iterdir()]


def test_the_host_speaks_1_1_and_still_1_0() -> None:
    assert CONTRACT_VERSION == "1.1"
    assert KNOWN_CONTRACT_VERSIONS == ("1.0", "1.1")


def test_1_1_vectors_add_to_1_0s_and_each_says_what_the_call_does() -> None:
    old = {vector.id for vector in load_vectors("1.0")}
    new = {vector.id for vector in load_vectors("1.1")}
    assert old < new  # every 1.0 vector is still checked on 1.1
    checked = 0
    for document in _vector_documents("1.1"):
        for raw in document["vectors"]:
            if "action" not in raw:
                continue
            call = ToolCall.model_validate(raw["payload"])
            assert call.action == ToolAction.model_validate(raw["action"]), raw["id"]
            checked += 1
    assert checked >= 8


def test_1_0_vectors_read_as_claude_code_calls() -> None:
    calls = [v.event for v in load_vectors("1.0") if isinstance(v.event, ToolCall)]
    assert {call.harness for call in calls} == {"claude-code"}
    write = next(call for call in calls if call.tool == "Write")
    assert write.action == ToolAction(kind="write", writes=("/project/notes.md",))


PATCH = "*** Begin Patch\n*** Delete File: /o/x\n*** Update File: a\n*** Move to: /o/y\n"
A = ToolAction


@pytest.mark.parametrize(
    ("harness", "tool", "tool_input", "expected"),
    [
        ("claude-code", "Bash", {"command": "ls"}, A(kind="shell", command="ls")),
        ("claude-code", "Write", {"file_path": "/o/x"}, A(kind="write", writes=("/o/x",))),
        ("claude-code", "MultiEdit", {"file_path": "a.py"}, A(kind="edit", writes=("a.py",))),
        ("claude-code", "NotebookEdit", {"notebook_path": "n"}, A(kind="edit", writes=("n",))),
        ("gemini", "write_file", {"file_path": "/o/x"}, A(kind="write", writes=("/o/x",))),
        ("gemini", "replace", {"file_path": "/o/x"}, A(kind="edit", writes=("/o/x",))),
        (
            "gemini",
            "run_shell_command",
            {"command": "rm -rf /o", "dir_path": "sub"},
            A(kind="shell", command="rm -rf /o", cwd="sub"),
        ),
        ("gemini", "read_many_files", {"paths": ["a", "b"]}, A(kind="read", reads=("a", "b"))),
        ("codex", "Bash", {"command": "git push -f"}, A(kind="shell", command="git push -f")),
        (
            "codex",
            "exec_command",
            {"cmd": ["bash", "-lc", "git reset --hard"]},
            A(kind="shell", command="git reset --hard"),
        ),
        ("codex", "apply_patch", {"input": PATCH}, A(kind="edit", writes=("/o/x", "a", "/o/y"))),
        # A name from another harness's table means nothing here: no guessing.
        ("gemini", "Write", {"file_path": "/o/x"}, A()),
        ("codex", "write_file", {"file_path": "/o/x"}, A()),
        ("claude-code", "mcp__fs__write", {"path": "/o/x"}, A()),
        ("unheard-of", "Bash", {"command": "ls"}, A()),
    ],
)
def test_each_harness_table(
    harness: str, tool: str, tool_input: dict[str, Any], expected: ToolAction
) -> None:
    assert describe_tool(harness, tool, tool_input) == expected


def test_the_description_follows_an_input_a_plugin_changed() -> None:
    call = ToolCall(tool_use_id="t", tool="write_file", harness="gemini", input={"file_path": "a"})
    moved = call.model_copy(update={"input": {"file_path": "/elsewhere"}})
    assert moved.action.writes == ("/elsewhere",)


def test_a_wrongly_typed_input_is_described_without_paths_rather_than_raising() -> None:
    odd = describe_tool("gemini", "write_file", {"file_path": 3, "content": None})
    assert odd == ToolAction(kind="write")


def test_a_plugin_declaring_only_1_0_loads_and_sees_the_harness(tmp_path: Path) -> None:
    seen: list[tuple[str, str, str]] = []

    def register(on: Any) -> None:
        async def watch(engine: Any, event: ToolCall, call_next: Any) -> ToolResult:
            seen.append((engine.session.harness, event.harness, event.action.kind))
            result: ToolResult = await call_next(event)
            return result

        on("tool.call", watch)

    old = make_plugin("only-one-oh", register, contract=">=1.0,<1.1")
    newer = make_plugin("from-the-future", register, contract=">=1.2,<2")

    async def main() -> None:
        async with Host(
            plugins=[old, newer],
            entry_points=False,
            settings=HostSettings(store="memory://"),
            config={},
        ) as host:
            records = {record.name: record for record in host.plugins}
            assert records["only-one-oh"].status == "loaded"
            assert records["from-the-future"].status == "incompatible"
            assert "1.0, 1.1" in (records["from-the-future"].error or "")
            await host.dispatch(SessionStart(session_id="g", harness="gemini", cwd=str(tmp_path)))
            call = ToolCall(
                session_id="g",
                harness="gemini",
                tool_use_id="g1",
                tool="write_file",
                input={"file_path": "x"},
            )
            await host.dispatch(call)

    anyio.run(main)
    assert seen == [("gemini", "gemini", "write")]
