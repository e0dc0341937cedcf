"""What write-guard keeps between calls: only pure results of the command text, bounded; the
paths a line names are resolved afresh at every call."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from framework import FakeClock, Host, SessionStart, ToolCall, ToolResult
from write_guard._surface import (
    SURFACE_KEPT_CHARS,
    SURFACES_KEPT,
    analysed_bash_surface,
    extract_surface,
)

import write_guard
from write_guard import _bash, _control, _runtime, _surface


@pytest.fixture(autouse=True)
def empty_caches() -> Iterator[None]:
    _surface._kept_bash_surface.cache_clear()
    _runtime._kept_control.cache_clear()
    yield
    _surface._kept_bash_surface.cache_clear()
    _runtime._kept_control.cache_clear()


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[str]:
    calls: list[str] = []
    original = getattr(module, name)

    def counted(command: str, *args: Any) -> Any:
        calls.append(command)
        return original(command, *args)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_line_seen_again_is_not_analysed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting(monkeypatch, _surface, "analyse_bash")
    first = extract_surface("Bash", {"command": "rm -rf build && git reset --hard"})
    second = extract_surface("Bash", {"command": "rm -rf build && git reset --hard"})
    assert second is first
    assert calls == ["rm -rf build && git reset --hard"]
    assert [t.path for t in first.targets] == ["build"]
    assert first.git_commands == (("git", "reset", "--hard"),)


def test_a_kept_surface_is_the_fresh_analysis(corpus_bash_commands: list[str]) -> None:
    for command in corpus_bash_commands[:400]:
        kept = extract_surface("Bash", {"command": command})
        assert extract_surface("Bash", {"command": command}) is kept
        fresh = _surface._analysed_or_quick(command)
        assert kept == fresh, command
        if kept.programs:  # the full analysis, not the shortcut (which lists no programs)
            assert kept == analysed_bash_surface(command), command


def test_a_long_line_is_analysed_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting(monkeypatch, _surface, "analyse_bash")
    line = "cat > notes.txt <<'EOF'\n" + "x" * SURFACE_KEPT_CHARS + "\nEOF"
    for _ in range(2):
        assert [t.path for t in extract_surface("Bash", {"command": line}).targets] == ["notes.txt"]
    assert len(calls) == 2
    assert _surface._kept_bash_surface.cache_info().currsize == 0


def test_the_kept_lines_are_bounded() -> None:
    for number in range(SURFACES_KEPT + 50):
        extract_surface("Bash", {"command": f"rm file{number}"})
    assert _surface._kept_bash_surface.cache_info().currsize == SURFACES_KEPT


def test_the_control_plane_verdict_is_kept_per_line_and_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = counting(monkeypatch, _runtime, "control_denial")
    line = "kill -9 4242"
    programs = _bash.analyse_bash(line).programs
    for _ in range(2):
        assert _runtime.kept_control(line, tuple(programs), 4242) is not None
    assert _runtime.kept_control(line, tuple(programs), 4343) is None
    assert calls == [line, line]
    assert _control.control_denial(line, programs, (4242,)) is not None


def bash(tool_use_id: str, command: str) -> ToolCall:
    return ToolCall(
        session_id="s1", tool_use_id=tool_use_id, tool="Bash", input={"command": command}
    )


@pytest.mark.anyio
async def test_the_same_line_is_judged_by_the_file_system_of_each_call(layout: Any) -> None:
    ran: list[str] = []

    async def terminal(event: ToolCall) -> ToolResult:
        ran.append(event.tool_use_id)
        return ToolResult(output="done")

    line = "echo done > report.txt"
    env = {"HOME": str(layout.home), "CLAUDE_PROJECT_DIR": str(layout.ws)}
    async with Host(
        plugins=[write_guard],
        entry_points=False,
        store="memory://",
        clock=FakeClock(start_ms=1_700_000_000_000),
        env=env,
        options={
            "write-guard": {
                "snapshots": False,
                "sandbox": "off",
                "extra_writable_roots": [str(layout.scratch)],
            }
        },
    ) as host:
        await host.dispatch(SessionStart(session_id="s1", cwd=str(layout.ws)))
        (layout.ws / "report.txt").write_text("")
        first = (await host.dispatch(bash("t1", line), terminal=terminal)).result
        # The same text, now a symlink out of the workspace: the kept surface is the same, the
        # resolution is not.
        (layout.ws / "report.txt").unlink()
        os.symlink(layout.out / "target.txt", layout.ws / "report.txt")
        second = (await host.dispatch(bash("t2", line), terminal=terminal)).result
    assert first.denial is None
    assert second.denial is not None
    assert "outside-roots" in second.denial.reason
    assert ran == ["t1"]
