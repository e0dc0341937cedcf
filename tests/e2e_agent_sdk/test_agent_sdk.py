"""The real Claude Agent SDK, its bundled CLI against the scripted mock Messages API, with every
hookchain plugin running in this process through `framework.agent_sdk.hooks_for`.

The CLI runs under bwrap with only the sandbox writable (the SDK starts it through `cli_path`, a
wrapper that jails it), so a guard that fails lets the scripted write change only the sandbox.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import jail
from mock_api import MockAPI, Step, bash, say, write
from suites import episodes

from framework import Host, ToolCall

RUN_TIMEOUT_S = 120.0
pytestmark = pytest.mark.slow


@dataclass
class Box:
    root: Path
    workspace: Path
    outside: Path
    home: Path
    cli: Path


@pytest.fixture
def box(bundled_cli: Path) -> Iterator[Box]:
    with tempfile.TemporaryDirectory(prefix="sdk-e2e-") as folder:
        root = Path(folder).resolve()
        workspace, outside, home = (root / name for name in ("ws", "outside", "home"))
        for path in (workspace, outside, home / "tmp", home / ".claude"):
            path.mkdir(parents=True)
        wrapper = root / "claude-jailed"
        argv = " ".join(f"'{part}'" for part in jail(root))
        wrapper.write_text(f"#!/bin/sh\nexec {argv} '{bundled_cli}' \"$@\"\n")
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        yield Box(root, workspace, outside, home, wrapper)


class Seen:
    """A probe plugin: what the host saw, by event, with the harness it was tagged with."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def module(self) -> Any:
        import types

        from framework import PluginInfo, hookimpl

        module = types.ModuleType("sdk_probe")
        module.plugin = PluginInfo(name="sdk-probe", contract=">=1.1,<2")  # type: ignore[attr-defined]
        events = self.events

        @hookimpl
        def register(on: Any, options: Any) -> None:
            async def watch(engine: Any, event: Any, call_next: Any) -> Any:
                detail = event.action.kind if isinstance(event, ToolCall) else ""
                events.append((event.name, engine.session.harness, detail))
                return await call_next(event)

            for name in ("session.start", "tool.call", "turn.complete", "session.end"):
                on(name, watch, order=-100)  # before write-guard, which denies

        module.register = register  # type: ignore[attr-defined]
        return module


async def _run(box: Box, api: MockAPI, prompt: str, plugins: list[Any]) -> list[Any]:
    import write_guard
    from claude_agent_sdk import ClaudeAgentOptions, query

    from framework.agent_sdk import hooks_for

    env = {
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-mock",
        "IS_SANDBOX": "1",
        "HOME": str(box.home),
        "CLAUDE_CONFIG_DIR": str(box.home / ".claude"),
        "TMPDIR": str(box.home / "tmp"),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    messages: list[Any] = []
    async with (
        Host(
            plugins=[write_guard, *plugins],
            entry_points=False,
            store=f"sqlite:///{box.root / 'store.db'}",
            env={"HOME": str(box.home)},
            # The CLI's TMPDIR (not this process's) is where write-guard's wrapped Bash
            # commands keep their shell state.
            options={"write-guard": {"extra_writable_roots": [env["TMPDIR"]]}},
        ) as host,
        hooks_for(host) as hooks,
    ):
        options = ClaudeAgentOptions(
            permission_mode="bypassPermissions",
            hooks=hooks,
            cwd=str(box.workspace),
            setting_sources=[],
            cli_path=str(box.cli),
            env=env,
            max_turns=10,
        )
        with anyio.fail_after(RUN_TIMEOUT_S):
            async for message in query(prompt=prompt, options=options):
                messages.append(message)
    return messages


def _mock(script: list[Step]) -> MockAPI:
    return MockAPI(script, max_requests=40, max_seconds=RUN_TIMEOUT_S + 30)


def test_a_write_outside_the_workspace_is_denied_and_not_created(box: Box) -> None:
    target = box.outside / "stolen.txt"
    seen = Seen()
    with _mock([write(str(target), "x\n"), say("Done.")]) as api:
        anyio.run(_run, box, api, "write the file", [seen.module()])
        results = api.tool_results()
    assert not target.exists()
    assert len(results) == 1 and results[0].is_error
    assert "write-guard" in results[0].text
    # Every event came through the SDK adapter, tagged with its harness, sessions opened/closed.
    names = [name for name, _, _ in seen.events]
    assert names[0] == "session.start" and names[-1] == "session.end"
    assert {harness for _, harness, _ in seen.events} == {"claude-agent-sdk"}
    assert ("tool.call", "claude-agent-sdk", "write") in seen.events


def test_a_healthy_run_is_untouched(box: Box) -> None:
    target = box.workspace / "notes.md"
    with _mock([write(str(target), "# notes\n"), say("Done.")]) as api:
        anyio.run(_run, box, api, "write the notes", [])
        results = api.tool_results()
        bodies = api.bodies()
    assert target.read_text() == "# notes\n"
    assert len(results) == 1 and not results[0].is_error
    assert not any("hookchain" in str(body) or "write-guard" in str(body) for body in bodies)


def _git(box: Box, *args: str) -> str:
    """git in the workspace, with the sandbox's home (no person's git config is read)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(box.home), "GIT_CONFIG_NOSYSTEM": "1"}
    identity = ["-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]
    done = subprocess.run(
        ["git", *identity, *args],
        cwd=box.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def test_a_dangerous_git_operation_is_held(box: Box) -> None:
    _git(box, "init", "-q", "-b", "main")
    (box.workspace / "README.md").write_text("# ws\n")
    _git(box, "add", "README.md")
    _git(box, "commit", "-q", "-m", "first")
    (box.workspace / "work.txt").write_text("uncommitted work\n")
    _git(box, "add", "work.txt")
    with _mock([bash("git reset --hard HEAD"), say("Done.")]) as api:
        anyio.run(_run, box, api, "reset it", [])
        results = api.tool_results()
    assert (box.workspace / "work.txt").read_text() == "uncommitted work\n"
    assert "work.txt" in _git(box, "diff", "--cached", "--name-only")
    assert len(results) == 1 and results[0].is_error
    assert "write-guard" in results[0].text


def test_a_repeated_failing_command_is_nudged(box: Box) -> None:
    import loop_breaker

    # One turn per call: each tool_use needs its own id, or the CLI drops the repeats.
    script = [*(bash("ls does-not-exist") for _ in range(5)), say("Done.")]
    with _mock(script) as api:
        anyio.run(_run, box, api, "list it", [loop_breaker])
        results = api.tool_results()
        bodies = api.bodies()
    assert len(results) == 5 and all(r.is_error for r in results), results
    # The note comes back with a failure's result: in a later request, never the first.
    assert "loop-breaker" not in json.dumps(bodies[0])
    assert any("loop-breaker" in json.dumps(body) for body in bodies[1:])


def test_observer_writes_an_episode_of_the_sdk_turn(box: Box) -> None:
    import observer

    with _mock([bash("echo hi"), say("Done.")]) as api:
        anyio.run(_run, box, api, "say hi", [observer])
    found = episodes(box.workspace)
    assert len(found) == 1, found
    assert found[0]["task_size"]["tool_calls"] == 1, found


def test_observer_names_the_harness_of_each_episode(box: Box) -> None:
    import observer

    with _mock([bash("echo hi"), say("Done.")]) as api:
        anyio.run(_run, box, api, "say hi", [observer])
    found = episodes(box.workspace)
    assert found
    assert all('"harness": "claude-agent-sdk"' in json.dumps(e) for e in found), found


def test_no_sdk_process_outlives_the_run(box: Box) -> None:
    with _mock([say("Nothing to do.")]) as api:
        anyio.run(_run, box, api, "hello", [])
    # The jailed CLI's command line names the sandbox (bwrap binds it): none may be left.
    leftovers = [
        pid for pid in os.listdir("/proc") if pid.isdigit() and str(box.root) in _cmdline(pid)
    ]
    assert leftovers == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
