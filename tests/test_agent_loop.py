"""The embedding example: a scripted agent loop whose tools really run, through the host."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hostkit import make_plugin

from framework import Host, HostSettings, ToolResult

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "agent_loop.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_loop_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def no_writes(on: Any) -> None:
    async def guard(engine: Any, event: Any, call_next: Any) -> Any:
        return ToolResult.denied("writes are off in this test", by="no-writes")

    on("tool.call", guard, match={"tool": "Write"})


@pytest.mark.anyio
async def test_the_loop_runs_real_tools_through_the_host(tmp_path: Path) -> None:
    example = load_example()
    settings = HostSettings(store="memory://")
    async with Host(plugins=[], entry_points=False, settings=settings, config={}) as host:
        lines = await example.run_session(host, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    assert "tool: Bash -> 'hello'" in lines
    assert lines[0] == "model: Let me look around."


@pytest.mark.anyio
async def test_a_plugin_denial_stops_the_real_tool(tmp_path: Path) -> None:
    example = load_example()
    settings = HostSettings(store="memory://")
    plugin = make_plugin("no-writes", no_writes)
    async with Host(plugins=[plugin], entry_points=False, settings=settings, config={}) as host:
        lines = await example.run_session(host, tmp_path)
    assert not (tmp_path / "notes.txt").exists()
    assert "tool: Write denied by no-writes: writes are off in this test" in lines
    assert "  [no-writes] deny: writes are off in this test" in lines
    assert any(line.startswith("tool: Bash -> ") and "No such file" in line for line in lines)


def test_the_example_runs_as_a_script_with_the_installed_plugins(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("plugins: ")
    assert "model: Done: notes.txt holds the greeting." in done.stdout
