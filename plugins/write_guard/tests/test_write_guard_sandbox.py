"""The sandbox wrapper behaves like the original command inside the roots (cwd carried to the
next call, the shell's functions and aliases, signals, other input fields), the fallback
without a sandbox fails closed and says so, and a CLI approval needs the person's code."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
from framework import (
    Host,
    PluginInfo,
    SessionStart,
    Store,
    ToolCall,
    ToolResult,
    hookimpl,
    open_backend,
)
from wg_jail import BWRAP, Tree, guard_decides, running_claude
from write_guard._claude_sandbox import (
    compare_settings,
    sandbox_settings,
    settings_files,
    write_sandbox_settings,
)
from write_guard._cli import approve_code_in
from write_guard._options import Options
from write_guard._sandbox import _find_nested, plan_sandbox, probe, work_trees_below, wrap_command

import write_guard
from write_guard import _runtime

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap")


def _wrapped(tree: Tree, command: str) -> str:
    assert BWRAP is not None
    plan = plan_sandbox(BWRAP, [str(tree.ws), str(tree.root / "tmp")], [], [])
    return wrap_command(command, plan)


@needs_bwrap
def test_a_cd_carries_over_to_the_next_call_as_the_harness_keeps_it(tree: Tree) -> None:
    # The harness runs each call in a shell and keeps its final directory for the next one.
    ran = tree.run(f"{_wrapped(tree, 'cd sub')} && pwd -P")
    assert ran.stdout.strip() == str(tree.ws / "sub"), ran


@needs_bwrap
def test_the_shells_functions_and_aliases_reach_the_command(tree: Tree) -> None:
    # As in the harness's shell snapshot: defined in the shell, then the command is eval'ed.
    setup = "greet() { echo hi \"$1\"; }; shopt -s expand_aliases; alias ll='echo aliased'"
    command = "greet you; ll"
    ran = tree.run(f"{setup}\neval {_quote(_wrapped(tree, command))}")
    assert ran.stdout.splitlines() == ["hi you", "aliased"], ran


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@needs_bwrap
@pytest.mark.parametrize(
    ("command", "status"), [("exit 7", 7), ("kill -TERM $$", 143), ("false", 1), (":", 0)]
)
def test_exit_status_and_signals_are_the_originals(tree: Tree, command: str, status: int) -> None:
    assert tree.run(command).rc == status
    assert tree.run(_wrapped(tree, command)).rc == status


@needs_bwrap
def test_a_missing_claude_folder_cannot_be_created(tree: Tree) -> None:
    (tree.ws / ".claude" / "settings.json").unlink()
    (tree.ws / ".claude").rmdir()
    ran = tree.run(_wrapped(tree, "mkdir -p .claude && echo '{}' > .claude/settings.json"))
    assert ran.rc != 0
    assert not (tree.ws / ".claude" / "settings.json").exists()


@needs_bwrap
async def test_other_input_fields_stay_and_the_change_is_audited(tree: Tree) -> None:
    async def terminal(event: ToolCall) -> ToolResult:
        return ToolResult(output="ran")

    env = {"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws)}
    async with Host(plugins=[write_guard], entry_points=False, env=env) as host:
        await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
        tool_input = {"command": "npm run dev", "run_in_background": True, "timeout": 5000}
        call = ToolCall(session_id="s", tool_use_id="t", tool="Bash", input=tool_input)
        outcome = await host.dispatch(call, terminal=terminal)
    updated = outcome.result.updated_input
    assert updated is not None
    assert updated["run_in_background"] is True and updated["timeout"] == 5000
    assert updated["command"] != "npm run dev" and "bwrap" in updated["command"]
    assert [(a.by, a.kind) for a in outcome.actions] == [("write-guard", "input")]


def test_probe_says_why_there_is_no_sandbox(tmp_path: Path) -> None:
    off = probe("off")
    assert off.bwrap is None and "switched off" in off.reason
    missing = probe("auto", which=str(tmp_path / "absent"))
    assert missing.bwrap is None and "cannot run" in missing.reason
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    found = probe("auto", which=str(broken))
    assert found.bwrap is None and "namespace" in found.reason


async def test_without_a_sandbox_unreadable_lines_are_refused_and_plain_ones_pass(
    tree: Tree,
) -> None:
    refused = await guard_decides(tree, "echo x | tee >(cat > f) >/dev/null", sandbox="off")
    assert refused.denied is not None and "no-sandbox" in refused.denied
    assert "Instead:" in refused.denied
    builder = await guard_decides(tree, "make -C /elsewhere", sandbox="off")
    assert builder.denied is not None and "`make`" in builder.denied
    plain = await guard_decides(tree, "ls -la && cat a.txt", sandbox="off")
    assert plain.denied is None and plain.command == "ls -la && cat a.txt"


async def test_without_a_sandbox_the_person_is_told_at_session_start(tree: Tree) -> None:
    options = {"write-guard": {"sandbox": "off"}}
    async with Host(plugins=[write_guard], entry_points=False, options=options) as host:
        outcome = await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
    toasts = [a.text for a in outcome.actions if a.kind == "toast"]
    assert toasts and "NOT enforced" in toasts[0]


async def test_a_cli_approval_needs_the_code_only_the_person_saw(tree: Tree) -> None:
    command = "git reset --hard"
    seen_by_model: list[str] = []

    async def terminal(event: ToolCall) -> ToolResult:
        return ToolResult(output="ran")

    env = {"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws)}
    backend = open_backend(f"sqlite:///{tree.root / 'store.sqlite'}")
    async with Host(plugins=[write_guard], entry_points=False, env=env, store=backend) as host:
        await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
        call = ToolCall(session_id="s", tool_use_id="t1", tool="Bash", input={"command": command})
        held = await host.dispatch(call, terminal=terminal)
        assert held.result.denial is not None
        seen_by_model.append(held.result.denial.reason)
        seen_by_model += [a.text for a in held.actions if a.kind not in {"toast", "transcript"}]
        toast = next(a.text for a in held.actions if a.kind == "toast")
        code = toast.rsplit(" ", 1)[1]
        assert all(code not in text for text in seen_by_model)
        assert all("hookchain approve" not in text for text in seen_by_model)
        store = Store(backend)
        assert await approve_code_in(store, "WRONGCODE", 0) is None
        assert await approve_code_in(store, code, await host.clock.now()) is not None
        assert await approve_code_in(store, code, await host.clock.now()) is None  # used up
        again = call.model_copy(update={"tool_use_id": "t2"})
        allowed = await host.dispatch(again, terminal=terminal)
    assert allowed.result.denial is None


@needs_bwrap
async def test_work_lost_past_the_gate_comes_back_with_hookchain_restore(tree: Tree) -> None:
    # A script runs the reset: the gate cannot see it, the sandbox allows it (inside the
    # workspace); the snapshot taken before the command brings the change back.
    script = "python3 -c \"import subprocess; subprocess.run(['git', 'reset', '-q', '--hard'])\""
    verdict = await guard_decides(tree, script)
    assert verdict.denied is None and verdict.command is not None
    assert tree.run(verdict.command).rc == 0
    assert (tree.ws / "a.txt").read_text() == "a\n"
    hookchain = Path(sys.executable).parent / "hookchain"
    listed = tree.run(f"{hookchain} restore")
    assert listed.rc == 0, listed
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert len(names) == 1, listed.stdout
    restored = tree.run(f"{hookchain} restore {names[0]}")
    assert restored.rc == 0, restored
    assert (tree.ws / "a.txt").read_text() == "dirty\n"
    missing = tree.run(f"{hookchain} restore nothing-like-this")
    assert missing.rc == 2 and "no write-guard snapshot" in missing.stderr


@needs_bwrap
async def test_a_slow_snapshot_does_not_refuse_the_command(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(*_: object) -> None:
        time.sleep(2.5)  # longer than the handler's budget would allow

    monkeypatch.setattr(_runtime, "record", slow)
    started = time.monotonic()
    verdict = await guard_decides(tree, "echo x > new.txt")
    assert verdict.denied is None and verdict.command is not None
    assert time.monotonic() - started < 2.0


@needs_bwrap
def test_the_approve_command_refuses_a_code_no_command_was_held_under(tree: Tree) -> None:
    hookchain = Path(sys.executable).parent / "hookchain"
    store = f"sqlite:///{tree.root / 'tmp' / 'store.sqlite'}"
    ran = tree.run(f"{hookchain} approve NOTACODE", env={"HOOKCHAIN_STORE": store})
    assert ran.rc == 2 and "no held command has this code" in ran.stderr, ran
    legacy = tree.run(f"{hookchain} approve 'git reset --hard'", env={"HOOKCHAIN_STORE": store})
    assert legacy.rc == 2, legacy  # a command is no code: the agent cannot approve itself


@needs_bwrap
async def test_other_plugins_see_the_command_as_the_model_wrote_it(tree: Tree) -> None:
    seen: list[str] = []

    async def peek(engine: Any, event: ToolCall, call_next: Any) -> Any:
        seen.append(str(event.input["command"]))
        return await call_next(event)

    module = types.ModuleType("peeker")
    module.plugin = PluginInfo(name="peeker", contract=">=1,<2")  # type: ignore[attr-defined]

    @hookimpl
    def register(on: Any, options: Any) -> None:
        on("tool.call", peek, order=500)

    module.register = register  # type: ignore[attr-defined]
    reached: list[str] = []

    async def terminal(event: ToolCall) -> ToolResult:
        reached.append(str(event.input["command"]))
        return ToolResult(output="ran")

    env = {"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws)}
    async with Host(plugins=[write_guard, module], entry_points=False, env=env) as host:
        await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
        call = ToolCall(session_id="s", tool_use_id="t", tool="Bash", input={"command": "ls"})
        await host.dispatch(call, terminal=terminal)
    assert seen == ["ls"]
    assert len(reached) == 1 and "bwrap" in reached[0]


@needs_bwrap
def test_a_store_file_inside_the_hidden_data_dir_does_not_break_the_sandbox(tree: Tree) -> None:
    # The host's data dir and its store file are both hidden; bwrap could not make a mount
    # point for the file inside the empty folder that hides the dir.
    assert BWRAP is not None
    data = tree.root / "data"
    data.mkdir(exist_ok=True)
    (data / "store.sqlite3").write_text("approvals")
    roots = [str(tree.ws), str(tree.root / "tmp")]
    plan = plan_sandbox(BWRAP, roots, [], [str(data), str(data / "store.sqlite3")])
    ran = tree.run(wrap_command(f"echo in > f.txt; cat {data}/store.sqlite3", plan))
    assert (tree.ws / "f.txt").read_text() == "in\n", ran
    assert "approvals" not in ran.stdout


def test_claude_codes_sandbox_settings_carry_the_policy(tmp_path: Path) -> None:
    ws, extra, data = tmp_path / "ws", tmp_path / "tmp", tmp_path / "data"
    for folder in (ws / ".git" / "hooks", ws / ".claude", extra, data):
        folder.mkdir(parents=True)
    (ws / ".git" / "config").write_text("")
    plan = plan_sandbox("bwrap", [str(ws), str(extra)], [], [str(data)])
    value = sandbox_settings(plan, str(ws))
    assert value["allowUnsandboxedCommands"] is False and value["failIfUnavailable"] is True
    assert value["autoAllowBashIfSandboxed"] is False
    files = value["filesystem"]
    assert files["allowWrite"] == [str(extra)]
    deny = set(files["denyWrite"])
    claude = ws / ".claude"
    protected = {ws / ".git" / "config", ws / ".git" / "hooks", claude / "settings.local.json"}
    assert {str(path) for path in protected} <= deny
    assert str(claude) not in deny  # Claude Code binds .claude/commands and agents inside it
    assert str(data) in deny and files["denyRead"] == [str(data)]
    files = settings_files(str(ws), str(tmp_path / "home"))
    assert not compare_settings(files, lambda: value).on
    write_sandbox_settings(str(ws), value)
    assert compare_settings(files, lambda: value).holds
    # A local file that lets the model out switches the route back to write-guard's wrapper.
    (ws / ".claude" / "settings.local.json").write_text(
        '{"sandbox": {"allowUnsandboxedCommands": true}}'
    )
    loose = compare_settings(files, lambda: value)
    assert loose.on and not loose.holds
    assert loose.mismatch == "allowUnsandboxedCommands is true, not false"


async def _bash_outcome(
    tree: Tree, tool_input: dict[str, Any], options: dict[str, Any] | None = None
) -> Any:
    async def terminal(event: ToolCall) -> ToolResult:
        return ToolResult(output="ran")

    env = {"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws)}
    chosen = {"write-guard": options} if options is not None else None
    async with Host(plugins=[write_guard], entry_points=False, env=env, options=chosen) as host:
        await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
        call = ToolCall(session_id="s", tool_use_id="t", tool="Bash", input=tool_input)
        return await host.dispatch(call, terminal=terminal)


@needs_bwrap
async def test_under_claude_codes_own_sandbox_the_command_is_left_as_written(tree: Tree) -> None:
    # The settings `hookchain install` writes from the policy of the host below; its temp
    # folder is the tree's (the tree, in the real one, would be writable whole).
    options = {"extra_writable_roots": [str(tree.root / "tmp")]}
    guard = _runtime.Guard(Options(**options))  # type: ignore[arg-type]
    write_sandbox_settings(
        str(tree.ws), guard.claude_expected(str(tree.ws), str(tree.root / "home"))
    )
    with running_claude(tree.root / "home" / ".claude", "s"):
        outcome = await _bash_outcome(tree, {"command": "npm run dev"}, options)
    assert outcome.result.updated_input is None
    assert outcome.result.denial is None


@needs_bwrap
async def test_a_model_asking_to_leave_the_sandbox_stays_in_it(tree: Tree) -> None:
    # Real sessions set it often; Claude Code's own sandbox ignores it under write-guard's
    # settings, and here the wrapper confines the command whatever it says: no denial needed.
    outcome = await _bash_outcome(tree, {"command": "ls", "dangerouslyDisableSandbox": True})
    assert outcome.result.denial is None
    updated = outcome.result.updated_input
    assert updated is not None and "bwrap" in updated["command"]


def test_the_walk_for_nested_repositories_says_what_it_left_unread(tmp_path: Path) -> None:
    # One walk for the sandbox's nested repositories and the gitlink check's fallback: it
    # reads the levels and entries it is given, skips the named folders, and says when a
    # folder was left unread (for the gitlink check to fail closed).
    ws = tmp_path / "ws"
    for folder in ("", "a", "a/b", "a/b/c", "node_modules/x"):
        (ws / folder / ".git").mkdir(parents=True)
    found = work_trees_below(str(ws), 3, 1_000, frozenset({"node_modules"}))
    assert found == type(found)((str(ws), str(ws / "a"), str(ws / "a" / "b")), False)
    every = work_trees_below(str(ws), None, 1_000)
    assert sorted(every.work_trees) == sorted(
        str(ws / f) if f else str(ws) for f in ("", "a", "a/b", "a/b/c", "node_modules/x")
    )
    assert every.complete
    assert not work_trees_below(str(ws), None, 3).complete
    # The sandbox's walk: the root's own repository is not nested, the skipped ones unseen.
    assert _find_nested(str(ws))[0] == (str(ws / "a" / ".git"), str(ws / "a" / "b" / ".git"))
