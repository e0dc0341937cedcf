"""Which route enforces shell writes: Claude Code's own sandbox (settings `hookchain install`
writes from the policy), write-guard's bwrap rewrite (only with Claude Code's permission checks
off), or none (line analysis, fail closed); said plainly at session start, once per session when
permission checks turn the rewrite off, and in `hookchain status`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from framework import Action, AgentInfo, Host, SessionStart, ToolCall, ToolResult
from wg_jail import BWRAP, Tree, running_claude
from write_guard._claude_sandbox import REQUIRED, write_sandbox_settings
from write_guard._options import Options
from write_guard._runtime import Guard

import write_guard

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap")
CLAUDE_SANDBOX_HERE = sys.platform == "linux" and all(
    shutil.which(tool) for tool in ("bwrap", "socat")
)
needs_claude_sandbox = pytest.mark.skipif(
    not CLAUDE_SANDBOX_HERE, reason="Claude Code's sandbox needs bwrap and socat"
)

UNREADABLE = "echo x | tee >(cat > f) >/dev/null"
"""A line the analysis cannot read fully: refused where no sandbox confines it."""


async def _session(
    tree: Tree,
    calls: list[dict[str, Any]],
    *,
    harness: str = "claude-code",
    reached: list[str] | None = None,
    env: dict[str, str] | None = None,
    agents: tuple[AgentInfo, ...] = (),
    launched: Sequence[str] | None = (),
    **options: object,
) -> tuple[list[ToolResult], list[Action]]:
    """One session in a real host: its session start, then each Bash call (`command`,
    `permission_mode`, and `before`: what to do first; or another `tool` with its `input`);
    the results and every action (toasts included). `reached`: gets each command that
    reached the harness. Under Claude Code, a process stands for it, started with `launched`
    on its command line (None: no process names the session)."""

    async def terminal(event: ToolCall) -> ToolResult:
        if reached is not None and "command" in event.input:
            reached.append(str(event.input["command"]))
        return ToolResult(output="ran")

    env = {"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws), **(env or {})}
    settings = {"extra_writable_roots": [str(tree.root / "tmp")], **options}
    results: list[ToolResult] = []
    actions: list[Action] = []
    config = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env["HOME"]) / ".claude")
    claude = (
        running_claude(config, "s", launched)
        if launched is not None and harness == "claude-code"
        else contextlib.nullcontext()
    )
    with claude:
        async with Host(
            plugins=[write_guard], entry_points=False, store="memory://", env=env,
            options={"write-guard": settings},
        ) as host:  # fmt: skip
            start = SessionStart(session_id="s", cwd=str(tree.ws), harness=harness)
            actions += (await host.dispatch(start)).actions
            for agent in agents:
                host.note_agent("s", agent)
            for index, call in enumerate(calls):
                if "before" in call:
                    call["before"]()
                shell = "Bash" if harness != "gemini" else "run_shell_command"
                event = ToolCall(
                    session_id="s",
                    tool_use_id=f"t{index}",
                    tool=call.get("tool", shell),
                    input=call.get("input") or {"command": call["command"]},
                    permission_mode=call.get("permission_mode"),
                    harness=harness,
                    agent_id=call.get("agent_id"),
                )
                outcome = await host.dispatch(event, terminal=terminal)
                results.append(outcome.result)
                actions += outcome.actions
    return results, actions


def _toasts(actions: list[Action]) -> list[str]:
    return [a.text for a in actions if a.kind == "toast"]


def _options(tree: Tree, **values: object) -> Options:
    return Options(extra_writable_roots=[str(tree.root / "tmp")], **values)  # type: ignore[arg-type]


def _expected(tree: Tree) -> dict[str, Any]:
    """What `hookchain install` writes as `sandbox` for the sessions' policy (a copy)."""
    env = os.environ
    asked = Guard(_options(tree)).claude_expected(
        str(tree.ws), env.get("HOME"), env.get("CLAUDE_CONFIG_DIR")
    )
    value: dict[str, Any] = json.loads(json.dumps(asked))
    return value


def _claude_settings(tree: Tree) -> None:
    """Claude Code's sandbox settings as `hookchain install` writes them from the policy."""
    write_sandbox_settings(str(tree.ws), _expected(tree))


# -- permission_mode decides whether the rewrite holds ----------------------------------------


@needs_bwrap
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan", "dontAsk", "a-new-mode"])
async def test_with_permission_checks_on_and_no_claude_settings_the_line_analysis_decides(
    tree: Tree, mode: str
) -> None:
    calls = [
        {"command": "ls -la", "permission_mode": mode},
        {"command": UNREADABLE, "permission_mode": mode},
        {"command": "cat a.txt", "permission_mode": mode},
    ]
    (plain, unreadable, again), actions = await _session(tree, calls)
    # Never rewritten: Claude Code would check its rules on the wrapper, not on `ls -la`.
    assert plain.denial is None and plain.updated_input is None
    assert again.denial is None and again.updated_input is None
    assert unreadable.denial is not None and "no-sandbox" in unreadable.denial.reason
    warned = [text for text in _toasts(actions) if "checks its permission rules" in text]
    assert len(warned) == 1, _toasts(actions)  # once per session
    assert f"({mode} mode)" in warned[0] and "NOT enforced by the OS" in warned[0]
    assert "hookchain install" in warned[0]


@needs_bwrap
@pytest.mark.parametrize("mode", ["bypassPermissions", None])
async def test_with_permission_checks_off_or_unsaid_the_command_is_rewritten(
    tree: Tree, mode: str | None
) -> None:
    calls = [{"command": "ls -la", "permission_mode": mode}, {"command": UNREADABLE}]
    (plain, unreadable), actions = await _session(tree, calls)
    assert plain.updated_input is not None and "bwrap" in plain.updated_input["command"]
    # The OS confines it: the analysis need not refuse what it cannot read.
    assert unreadable.denial is None and unreadable.updated_input is not None
    assert not [text for text in _toasts(actions) if "checks its permission rules" in text]


@needs_bwrap
@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
async def test_under_claude_codes_sandbox_settings_every_mode_leaves_the_command_as_written(
    tree: Tree, mode: str
) -> None:
    _claude_settings(tree)
    calls = [{"command": "ls -la", "permission_mode": mode}, {"command": UNREADABLE}]
    (plain, unreadable), actions = await _session(tree, calls)
    assert plain.denial is None and plain.updated_input is None
    assert unreadable.denial is None and unreadable.updated_input is None
    assert _toasts(actions) == []


# -- Claude Code's sandbox settings that differ from the policy are not counted on --------------


def python_write(path: str, mode: str = "w") -> str:
    """A write the line analysis cannot see (a program writing by itself): only the OS stops it."""
    return f"python3 -c \"open('{path}', '{mode}').write('x\\n')\""


def _narrowed(tree: Tree) -> tuple[dict[str, Any], str, str]:
    """The person's `denyWrite` without `.git/config`, and a command writing it."""
    value = _expected(tree)
    config = str(tree.ws / ".git" / "config")
    value["filesystem"]["denyWrite"].remove(config)
    return value, python_write(".git/config", "a"), f"denyWrite lacks {config}"


def _widened(tree: Tree) -> tuple[dict[str, Any], str, str]:
    """A wider `allowWrite` (the outside folder), and a command writing there."""
    value = _expected(tree)
    out = str(tree.root / "out")
    value["filesystem"]["allowWrite"].append(out)
    return value, python_write(f"{out}/escaped.txt"), f"allowWrite also allows {out}"


DIFFERING = {"denyWrite-without-git-config": _narrowed, "allowWrite-wider": _widened}


@needs_bwrap
@pytest.mark.parametrize("differing", DIFFERING)
@pytest.mark.parametrize("mode", ["bypassPermissions", "default"])
async def test_claude_settings_that_differ_from_the_policy_let_no_write_through(
    tree: Tree, differing: str, mode: str
) -> None:
    value, command, difference = DIFFERING[differing](tree)
    write_sandbox_settings(str(tree.ws), value)
    reached: list[str] = []
    (result,), actions = await _session(
        tree, [{"command": command, "permission_mode": mode}], reached=reached
    )
    # Not Claude Code's sandbox then, nor the wrapper (it cannot run inside that sandbox):
    # the line analysis decides, failing closed, in every mode.
    assert result.denial is not None
    assert reached == []
    toasts = _toasts(actions)
    assert any(difference in text and "hookchain install" in text for text in toasts), toasts


@needs_bwrap
@pytest.mark.parametrize("config_dir", [None, "config"])
async def test_a_users_wider_allow_write_is_merged_like_claude_code_does(
    tree: Tree, config_dir: str | None
) -> None:
    # The project's settings are the policy's; the person's own (~/.claude, or
    # CLAUDE_CONFIG_DIR) add the outside folder, which Claude Code merges in.
    _claude_settings(tree)
    folder = tree.root / "home" / ".claude" if config_dir is None else tree.root / config_dir
    folder.mkdir(parents=True, exist_ok=True)
    out = str(tree.root / "out")
    (folder / "settings.json").write_text(
        json.dumps({"sandbox": {"filesystem": {"allowWrite": [out]}}}), encoding="utf-8"
    )
    env = {} if config_dir is None else {"CLAUDE_CONFIG_DIR": str(folder)}
    calls = [{"command": python_write(f"{out}/escaped.txt"), "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls, env=env)
    assert result.denial is not None and result.updated_input is None
    assert any(f"allowWrite also allows {out}" in text for text in _toasts(actions))


# -- the user's settings in CLAUDE_CONFIG_DIR are protected as the project's are ------------


def _config_dir(tree: Tree) -> Path:
    """A `CLAUDE_CONFIG_DIR` inside the workspace and not named `.claude`: its settings.json
    is the user's, which Claude Code merges into the project's sandbox."""
    folder = tree.ws / "claude-config"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("exists", [True, False])
async def test_the_users_settings_in_a_config_dir_inside_the_workspace_are_denied_to_the_agent(
    tree: Tree, exists: bool
) -> None:
    folder = _config_dir(tree)
    settings = folder / "settings.json"
    if exists:
        settings.write_text("{}\n", encoding="utf-8")
    wider = json.dumps({"sandbox": {"filesystem": {"allowWrite": ["/"]}}})
    edit = {"file_path": str(settings), "old_string": "{}", "new_string": wider}
    calls = [
        {"tool": "Write", "input": {"file_path": str(settings), "content": wider}},
        {"tool": "Edit", "input": edit},
        {"command": f"echo '{wider}' > claude-config/settings.json"},
        {"tool": "Write", "input": {"file_path": str(folder / "notes.md"), "content": "x"}},
    ]
    results, _actions = await _session(tree, calls, env={"CLAUDE_CONFIG_DIR": str(folder)})
    *widening, other = results
    for result in widening:
        assert result.denial is not None and f"{settings} is protected" in result.denial.reason
    assert other.denial is None  # the rest of the folder is the workspace's
    assert settings.exists() is exists


@needs_claude_sandbox
def test_the_users_settings_in_a_config_dir_inside_a_root_are_in_claude_codes_deny_write(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _config_dir(tree)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    settings = str(folder / "settings.json")

    def denied() -> list[str]:
        asked = write_guard.harness_settings("claude-code", "local", str(tree.ws), _options(tree))
        assert asked is not None
        return list(asked["sandbox"]["filesystem"]["denyWrite"])

    # Absent too: Claude Code denies its settings files itself, made or not.
    assert settings in denied()
    (folder / "settings.json").write_text("{}\n", encoding="utf-8")
    assert settings in denied()
    # A config dir outside every root adds nothing: install's settings stay as they were.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root / "config"))
    assert not [path for path in denied() if path.startswith(str(tree.root / "config"))]


@needs_bwrap
async def test_settings_lacking_the_users_settings_in_a_config_dir_inside_the_workspace_differ(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _config_dir(tree)
    _claude_settings(tree)  # as install wrote them without CLAUDE_CONFIG_DIR
    env = {"CLAUDE_CONFIG_DIR": str(folder)}
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls, env=env)
    assert result.denial is not None
    lacks = f"denyWrite lacks {folder / 'settings.json'}"
    assert any(lacks in text for text in _toasts(actions)), _toasts(actions)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    _claude_settings(tree)  # install run again with it
    (result,), actions = await _session(tree, [dict(calls[0])], env=env)
    assert not any(lacks in text for text in _toasts(actions)), _toasts(actions)
    # What is left: the record of Claude Code's sessions there, which a command could forge.
    assert result.denial is not None
    record = f"record of its sessions ({folder / 'sessions'}) lies where commands may write"
    assert any(record in text for text in _toasts(actions)), _toasts(actions)


@needs_bwrap
async def test_the_users_settings_in_a_config_dir_are_read_only_in_write_guards_sandbox(
    tree: Tree,
) -> None:
    folder = _config_dir(tree)
    settings = folder / "settings.json"
    settings.write_text("{}\n", encoding="utf-8")
    reached: list[str] = []
    calls = [{"command": python_write("claude-config/settings.json"), "permission_mode": None}]
    (result,), _actions = await _session(
        tree, calls, reached=reached, env={"CLAUDE_CONFIG_DIR": str(folder)}
    )
    assert result.updated_input is not None  # write-guard's wrapper, run for real here
    ran = tree.run(reached[0])
    assert ran.rc != 0 and "Read-only file system" in ran.stderr, ran
    assert settings.read_text(encoding="utf-8") == "{}\n"


@needs_bwrap
async def test_a_policy_root_missing_from_allow_write_keeps_claude_codes_sandbox_and_is_said(
    tree: Tree,
) -> None:
    # Claude Code makes ~/.claude/plans on its first plan, after install: commands there
    # fail under its sandbox, which still confines every other write.
    value = _expected(tree)
    tmp = str(tree.root / "tmp")
    value["filesystem"]["allowWrite"].remove(tmp)
    write_sandbox_settings(str(tree.ws), value)
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls)
    assert result.denial is None and result.updated_input is None
    [toast] = _toasts(actions)
    assert f"allowWrite lacks {tmp}" in toast and "hookchain install" in toast
    line = write_guard.status_line(str(tree.ws), _options(tree))
    assert line.startswith("shell writes: Claude Code's sandbox, in every permission mode, but")
    assert f"lack paths of write-guard's policy (allowWrite lacks {tmp})" in line


def test_the_hosts_own_folder_made_after_install_leaves_the_settings_the_policys(
    tree: Tree,
) -> None:
    before = _expected(tree)
    # A host makes it at a session's first events (plugins' data), after install.
    (tree.ws / ".hookchain" / "observer").mkdir(parents=True)
    assert _expected(tree) == before
    deny = before["filesystem"]["denyWrite"]
    assert str(tree.ws / ".hookchain") in deny
    # Not an absent hookchain.toml: Claude Code's sandbox would hold an empty file there while a
    # command runs, which the host would take for the project's settings; one that exists is.
    assert str(tree.ws / "hookchain.toml") not in deny
    (tree.ws / "hookchain.toml").write_text("[hookchain]\n")
    assert str(tree.ws / "hookchain.toml") in _expected(tree)["filesystem"]["denyWrite"]


def _narrowing_between(tree: Tree, mode: str, last: dict[str, Any]) -> list[dict[str, Any]]:
    """A call under the policy's settings, one after an edit narrowing `denyWrite`, and `last`."""
    narrowed, _command, _difference = _narrowed(tree)
    return [
        {"command": UNREADABLE, "permission_mode": mode},
        {
            "command": UNREADABLE,
            "permission_mode": mode,
            "before": lambda: write_sandbox_settings(str(tree.ws), narrowed),
        },
        {"command": UNREADABLE, "permission_mode": mode, **last},
    ]


@needs_bwrap
async def test_an_edit_of_the_settings_between_two_calls_flips_the_route(tree: Tree) -> None:
    _claude_settings(tree)
    calls = _narrowing_between(
        tree, "bypassPermissions", {"before": lambda: _claude_settings(tree)}
    )
    (first, narrower, restored), _actions = await _session(tree, calls)
    assert first.denial is None and first.updated_input is None  # no second sandbox
    assert narrower.denial is not None  # the line analysis, failing closed
    assert restored.denial is None and restored.updated_input is None


@needs_bwrap
async def test_an_edit_of_the_same_size_in_the_same_clock_tick_is_seen_too(tree: Tree) -> None:
    _claude_settings(tree)
    settings = tree.ws / ".claude" / "settings.json"
    config = str(tree.ws / ".git" / "config")

    def same_signature_edit() -> None:
        # Same inode, size and mtime as before: only the file's recent change tells.
        before = settings.stat()
        text = settings.read_text(encoding="utf-8")
        settings.write_text(text.replace(config, config[:-1] + "X"), encoding="utf-8")
        os.utime(settings, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = settings.stat()
        assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)

    mode = "bypassPermissions"
    calls = [
        {"command": UNREADABLE, "permission_mode": mode},
        {"command": UNREADABLE, "permission_mode": mode, "before": same_signature_edit},
    ]
    (first, edited), _actions = await _session(tree, calls)
    assert first.denial is None
    assert edited.denial is not None


def _age(path: Path, seconds: float) -> None:
    """Date a file's change back: an edit older than the cache's doubt window."""
    then = time.time() - seconds
    os.utime(path, (then, then))


@needs_bwrap
async def test_the_comparison_is_redone_only_when_a_settings_file_changes(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    import write_guard._runtime as runtime

    compared: list[str] = []
    compare = runtime.expected_settings

    def counted(policy: Any, *rest: Any) -> dict[str, Any]:
        compared.append(policy.workspace_root)
        return compare(policy, *rest)

    settings = tree.ws / ".claude" / "settings.json"
    _claude_settings(tree)
    _age(settings, 60)
    # The tree's home has a user settings file of its own, just made: aged too.
    for user in (tree.root / "home" / ".claude").glob("settings*.json"):
        _age(user, 60)
    narrowed, _command, _difference = _narrowed(tree)
    monkeypatch.setattr(runtime, "expected_settings", counted)

    def narrow() -> None:
        write_sandbox_settings(str(tree.ws), narrowed)
        _age(settings, 30)

    mode = "bypassPermissions"
    calls = [
        {"command": UNREADABLE, "permission_mode": mode},
        {"command": UNREADABLE + " ", "permission_mode": mode},
        {"command": UNREADABLE, "permission_mode": mode, "before": narrow},
        {"command": UNREADABLE + " ", "permission_mode": mode},
    ]
    results, _actions = await _session(tree, calls)
    assert [result.denial is None for result in results] == [True, True, False, False]
    # At the session start, then once more for the edit; not per call.
    assert compared == [str(tree.ws)] * 2, compared


# -- what the person is told at session start -------------------------------------------------


@needs_bwrap
async def test_session_start_says_when_only_bypass_mode_is_os_enforced(tree: Tree) -> None:
    _results, actions = await _session(tree, [])
    [toast] = _toasts(actions)
    assert "only in bypassPermissions mode" in toast and "they are NOT" in toast
    assert "hookchain install" in toast


@needs_bwrap
async def test_session_start_says_nothing_under_claude_codes_sandbox(tree: Tree) -> None:
    _claude_settings(tree)
    _results, actions = await _session(tree, [])
    assert _toasts(actions) == []


@needs_bwrap
async def test_session_start_says_when_claude_codes_sandbox_settings_differ_from_the_policy(
    tree: Tree,
) -> None:
    value, _command, difference = _narrowed(tree)
    write_sandbox_settings(str(tree.ws), value)
    _results, actions = await _session(tree, [])
    [toast] = _toasts(actions)
    assert "differ from write-guard's policy" in toast and difference in toast
    assert "NOT enforced by the OS as the policy says" in toast
    assert "hookchain install" in toast and "hookchain status" in toast


async def test_session_start_says_a_harness_that_drops_rewrites_is_not_enforced(
    tree: Tree,
) -> None:
    _results, actions = await _session(tree, [], harness="gemini")
    [toast] = _toasts(actions)
    assert "NOT enforced by the OS under gemini" in toast


async def test_session_start_says_no_sandbox_plainly(tree: Tree) -> None:
    _results, actions = await _session(tree, [], sandbox="off")
    [toast] = _toasts(actions)
    assert "NOT enforced by the OS here (the sandbox is switched off" in toast


# -- install: the settings write-guard asks for -------------------------------------------------


@needs_claude_sandbox
def test_install_is_asked_for_claude_codes_sandbox_from_the_policy(tree: Tree) -> None:
    asked = write_guard.harness_settings("claude-code", "local", str(tree.ws), _options(tree))
    assert asked is not None
    sandbox = asked["sandbox"]
    assert {key: sandbox[key] for key in REQUIRED} == REQUIRED
    assert sandbox["autoAllowBashIfSandboxed"] is False
    files = sandbox["filesystem"]
    assert files["allowWrite"] == [str(tree.root / "tmp")]
    assert str(tree.ws / ".git" / "config") in files["denyWrite"]
    assert str(tree.ws / ".claude" / "settings.local.hookchain.json") in files["denyWrite"]
    assert str(tree.root / "run") in files["denyRead"]  # the host's runtime dir
    # The same settings, asked again: install then changes nothing.
    again = write_guard.harness_settings("claude-code", "local", str(tree.ws), _options(tree))
    assert again == asked


def test_install_is_asked_for_nothing_where_claude_codes_sandbox_does_not_fit(
    tree: Tree,
) -> None:
    ws = str(tree.ws)
    assert write_guard.harness_settings("claude-code", "user", ws, _options(tree)) is None
    assert write_guard.harness_settings("gemini", "project", ws, _options(tree)) is None
    off = _options(tree, sandbox="off")
    assert write_guard.harness_settings("claude-code", "local", ws, off) is None


def test_install_is_asked_for_codexs_sandbox_from_the_policy(tree: Tree) -> None:
    asked = write_guard.harness_settings("codex", "project", str(tree.ws), _options(tree))
    assert asked == {
        "sandbox_mode": "workspace-write",
        "sandbox_workspace_write": {
            "writable_roots": [str(tree.ws), str(tree.root / "tmp")],
            # Without both, /tmp and $TMPDIR stay writable (tests/e2e_codex shows it).
            "exclude_tmpdir_env_var": True,
            "exclude_slash_tmp": True,
        },
    }
    ws = str(tree.ws)
    assert write_guard.harness_settings("codex", "user", ws, _options(tree)) is None
    assert (
        write_guard.harness_settings("codex", "project", ws, _options(tree, sandbox="off")) is None
    )


def test_status_says_what_codexs_sandbox_adds_and_cannot(tree: Tree) -> None:
    options = _options(tree)
    assert "under Codex" not in write_guard.status_line(str(tree.ws), options)
    config = tree.ws / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('sandbox_mode = "danger-full-access"\n', encoding="utf-8")
    loose = write_guard.status_line(str(tree.ws), options)
    assert "under Codex: line analysis (Codex's sandbox in" in loose
    config.write_text(
        'sandbox_mode = "workspace-write"\n[sandbox_workspace_write]\n'
        f'writable_roots = ["{tree.ws}", "{tree.root / "tmp"}"]\n'
        "exclude_tmpdir_env_var = true\nexclude_slash_tmp = true\n",
        encoding="utf-8",
    )
    line = write_guard.status_line(str(tree.ws), options)
    assert "under Codex: Codex's sandbox (workspace-write" in line
    assert "line analysis still decides every command" in line
    # Codex keeps .git read-only itself; the policy's other protected files it cannot.
    assert "*/.git/config" not in line
    assert "it cannot make read-only */.claude/settings*.json, */hookchain.toml" in line


# -- status: which route, plainly -----------------------------------------------------------------


@needs_claude_sandbox
def test_status_names_claude_codes_sandbox_and_says_when_its_settings_differ(tree: Tree) -> None:
    options = _options(tree)
    asked = write_guard.harness_settings("claude-code", "local", str(tree.ws), options)
    assert asked is not None
    write_sandbox_settings(str(tree.ws), dict(asked["sandbox"]))
    line = write_guard.status_line(str(tree.ws), options)
    assert line.startswith("shell writes: Claude Code's sandbox, in every permission mode")
    assert "match write-guard's policy" in line
    assert "a session's Claude Code command line counts too (--add-dir, --settings" in line
    looser = json.loads(json.dumps(asked["sandbox"]))
    looser["filesystem"]["allowWrite"].append(str(tree.root / "out"))
    looser["filesystem"]["denyWrite"].remove(str(tree.ws / ".git" / "config"))
    write_sandbox_settings(str(tree.ws), looser)
    differs = write_guard.status_line(str(tree.ws), options)
    # Not the route then: write-guard does not count on settings looser than its policy.
    assert differs.startswith("shell writes: NONE as write-guard's policy says")
    assert "differ from write-guard's policy" in differs
    assert f"allowWrite also allows {tree.root / 'out'}" in differs
    assert f"denyWrite lacks {tree.ws / '.git' / 'config'}" in differs
    assert "hookchain install" in differs and "hookchain status" in differs
    # Switched on without the rest: Claude Code's sandbox runs, with a way out.
    write_sandbox_settings(str(tree.ws), {"enabled": True})
    loose = write_guard.status_line(str(tree.ws), options)
    assert loose.startswith("shell writes: NONE as write-guard's policy says")
    assert "allowUnsandboxedCommands is null, not false" in loose


@needs_bwrap
def test_status_names_the_rewrite_route_and_where_it_does_not_hold(tree: Tree) -> None:
    line = write_guard.status_line(str(tree.ws), _options(tree))
    assert line.startswith("shell writes: write-guard's bwrap rewrite, in bypassPermissions")
    assert "in default, acceptEdits and plan mode NONE" in line
    assert "failing closed" in line


def test_status_says_none_plainly_without_a_sandbox(tree: Tree) -> None:
    line = write_guard.status_line(str(tree.ws), _options(tree, sandbox="off"))
    assert line.startswith("shell writes: NONE: not OS-enforced (the sandbox is switched off")
    assert "line analysis only, failing closed" in line


@needs_bwrap
def test_a_person_switching_claude_codes_sandbox_off_is_the_rewrite_route(tree: Tree) -> None:
    write_sandbox_settings(str(tree.ws), {"enabled": False})
    line = write_guard.status_line(str(tree.ws), _options(tree))
    assert line.startswith("shell writes: write-guard's bwrap rewrite")


def test_the_plugin_module_implements_both_hooks_as_the_host_calls_them(tree: Tree) -> None:
    host = Host(plugins=[write_guard], entry_points=False, store="memory://")
    host.load()
    names = {impl.plugin_name for impl in host.pm.hook.status_line.get_hookimpls()}
    assert names == {"write-guard"}
    assert {i.plugin_name for i in host.pm.hook.harness_settings.get_hookimpls()} == names


@needs_claude_sandbox
def test_sandbox_settings_prints_what_install_is_asked_for(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer
    from typer.testing import CliRunner

    monkeypatch.setenv("HOME", str(tree.root / "home"))
    (tree.ws / "hookchain.toml").write_text(
        f'[write-guard]\nextra_writable_roots = ["{tree.root / "tmp"}"]\n'
    )
    app = typer.Typer()
    write_guard.register_cli(app)
    shown = CliRunner().invoke(app, ["sandbox-settings", "--workspace", str(tree.ws), "--print"])
    assert shown.exit_code == 0, shown.output
    asked = write_guard.harness_settings("claude-code", "local", str(tree.ws), _options(tree))
    assert json.loads(shown.output) == asked  # the project's hookchain.toml was read


# -- settings beside `sandbox` that loosen it: Claude Code's sandbox builder applies them ----------


def _loosening(tree: Tree) -> dict[str, tuple[dict[str, Any], str]]:
    """Per shape, a `.claude/settings.local.json` that lets a command do more than the policy
    (Claude Code writes some of them itself), and the words the difference is said in."""
    out = str(tree.root / "out")
    return {
        "additionalDirectories": (
            {"permissions": {"additionalDirectories": [out]}},
            f"permissions make {out} writable",
        ),
        "allow-Edit-absolute": (
            {"permissions": {"allow": [f"Edit(/{out}/**)"]}},
            f"permissions make {out} writable",
        ),
        "allow-Edit-home": ({"permissions": {"allow": ["Edit(~/**)"]}}, "writable"),
        "excludedCommands": (
            {"sandbox": {"excludedCommands": ["python3"]}},
            'excludedCommands runs ["python3"] outside the sandbox',
        ),
        "allowRead": (
            {"sandbox": {"filesystem": {"allowRead": [str(tree.root / "run")]}}},
            "allowRead re-allows",
        ),
        "allowAllUnixSockets": (
            {"sandbox": {"network": {"allowAllUnixSockets": True}}},
            "network.allowAllUnixSockets is true",
        ),
        "allowUnixSockets": (
            {"sandbox": {"network": {"allowUnixSockets": ["/run/docker.sock"]}}},
            "network.allowUnixSockets is",
        ),
        "enableWeakerNestedSandbox": (
            {"sandbox": {"enableWeakerNestedSandbox": True}},
            "enableWeakerNestedSandbox is true",
        ),
        "enableWeakerNetworkIsolation": (
            {"sandbox": {"enableWeakerNetworkIsolation": True}},
            "enableWeakerNetworkIsolation is true",
        ),
        "allowAppleEvents": (
            {"sandbox": {"allowAppleEvents": True}},
            "allowAppleEvents is true",
        ),
        "allowMachLookup": (
            {"sandbox": {"network": {"allowMachLookup": ["com.apple.x"]}}},
            'network.allowMachLookup is ["com.apple.x"], not unset',
        ),
        # Claude Code's name for the filesystem half of its sandbox switched off (in 2.1.197 a
        # remote setting, which "relaxed" turns into `filesystem.disabled`).
        "filesystemPolicy-relaxed": (
            {"sandbox": {"filesystemPolicy": "relaxed"}},
            'filesystemPolicy is "relaxed", not "strict"',
        ),
        "filesystem-disabled": (
            {"sandbox": {"filesystem": {"disabled": True}}},
            "filesystem.disabled is true",
        ),
        "unknown-sandbox-key": (
            {"sandbox": {"allowEverything": True}},
            "sandbox.allowEverything in",
        ),
        "unknown-filesystem-key": (
            {"sandbox": {"filesystem": {"allowExecute": ["/"]}}},
            "sandbox.filesystem.allowExecute in",
        ),
        "unknown-network-key": (
            {"sandbox": {"network": {"allowAllHosts": True}}},
            "sandbox.network.allowAllHosts in",
        ),
        "network-not-an-object": (
            {"sandbox": {"network": "open"}},
            "sandbox.network in",
        ),
    }


LOOSENING = (
    "additionalDirectories", "allow-Edit-absolute", "allow-Edit-home", "excludedCommands",
    "allowRead", "allowAllUnixSockets", "allowUnixSockets", "enableWeakerNestedSandbox",
    "enableWeakerNetworkIsolation", "allowAppleEvents", "allowMachLookup",
    "filesystemPolicy-relaxed", "filesystem-disabled", "unknown-sandbox-key",
    "unknown-filesystem-key", "unknown-network-key", "network-not-an-object",
)  # fmt: skip


@needs_bwrap
@pytest.mark.parametrize("shape", LOOSENING)
async def test_settings_that_loosen_claude_codes_sandbox_beside_it_are_not_counted_on(
    tree: Tree, shape: str
) -> None:
    _claude_settings(tree)
    local, said = _loosening(tree)[shape]
    (tree.ws / ".claude" / "settings.local.json").write_text(json.dumps(local), encoding="utf-8")
    out = str(tree.root / "out")
    reached: list[str] = []
    calls = [{"command": python_write(f"{out}/e.txt"), "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls, reached=reached)
    assert result.denial is not None and reached == []
    assert any(said in text and "differ" in text for text in _toasts(actions)), _toasts(actions)


@needs_bwrap
async def test_an_unknown_sandbox_key_is_said_as_not_compared(tree: Tree) -> None:
    _claude_settings(tree)
    local = tree.ws / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"sandbox": {"allowEverything": True}}), encoding="utf-8")
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls)
    assert result.denial is not None
    said = f"sandbox.allowEverything in {local} is not a setting write-guard compares"
    assert any(said in text for text in _toasts(actions)), _toasts(actions)


@needs_bwrap
async def test_known_sandbox_settings_that_confine_no_less_keep_claude_codes_sandbox(
    tree: Tree,
) -> None:
    # Every other key of Claude Code's sandbox settings: network filters, credentials kept
    # from commands, the reporting of violations, the search tool, paths only a managed file
    # may set, and the strict filesystem policy.
    _claude_settings(tree)
    local = {
        "sandbox": {
            "filesystemPolicy": "strict",
            "network": {
                "allowedDomains": ["example.com"],
                "deniedDomains": ["bad.example"],
                "allowManagedDomainsOnly": True,
                "allowLocalBinding": True,
                "httpProxyPort": 3128,
                "socksProxyPort": 1080,
                "tlsTerminate": {"caCertPath": "/ca.pem", "caKeyPath": "/ca.key"},
            },
            "filesystem": {"allowManagedReadPathsOnly": True, "disabled": False},
            "credentials": {"files": [{"path": "~/.aws", "mode": "deny"}], "envVars": []},
            "ignoreViolations": {"*": ["/usr/bin"]},
            "ripgrep": {"command": "rg", "args": []},
            "bwrapPath": "/usr/bin/bwrap",
            "socatPath": "/usr/bin/socat",
            "autoAllowBashIfSandboxed": False,
        }
    }
    (tree.ws / ".claude" / "settings.local.json").write_text(json.dumps(local), encoding="utf-8")
    (result,), actions = await _session(
        tree, [{"command": UNREADABLE, "permission_mode": "default"}]
    )
    assert _toasts(actions) == []
    assert result.denial is None and result.updated_input is None


@needs_bwrap
async def test_what_claude_code_itself_adds_inside_the_workspace_keeps_its_sandbox(
    tree: Tree,
) -> None:
    # Rules within what the policy lets write already (Claude Code's own "allow edits here").
    _claude_settings(tree)
    inside = "Edit(/" + str(tree.ws) + "/**)"  # `//ws/**`: the workspace, absolute
    allow = ["Bash(npm test:*)", "Edit(src/**)", inside]
    local = {"permissions": {"allow": allow, "additionalDirectories": [str(tree.root / "tmp")]}}
    (tree.ws / ".claude" / "settings.local.json").write_text(json.dumps(local), encoding="utf-8")
    (result,), actions = await _session(
        tree, [{"command": UNREADABLE, "permission_mode": "default"}]
    )
    assert result.denial is None and result.updated_input is None
    assert _toasts(actions) == []


@needs_bwrap
async def test_the_agent_sdk_never_takes_claude_codes_sandbox_from_the_workspaces_files(
    tree: Tree,
) -> None:
    # Its sessions load no workspace settings (setting_sources=[]): those never switch its
    # sandbox on, whatever they say.
    _claude_settings(tree)
    out = str(tree.root / "out")
    reached: list[str] = []
    calls = [{"command": python_write(f"{out}/e.txt"), "permission_mode": "default"}]
    (result,), _actions = await _session(tree, calls, harness="claude-agent-sdk", reached=reached)
    assert result.denial is not None and reached == []


@needs_bwrap
async def test_a_settings_file_with_a_bom_is_read_as_claude_code_reads_it(tree: Tree) -> None:
    # Claude Code strips a leading BOM and applies the file: here its sandbox is switched off,
    # so it is not the route (the rewrite is).
    _claude_settings(tree)
    local = tree.ws / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"sandbox": {"enabled": False}}), encoding="utf-8-sig")
    calls = [{"command": "ls -la", "permission_mode": "bypassPermissions"}]
    (result,), _actions = await _session(tree, calls)
    assert result.updated_input is not None and "bwrap" in result.updated_input["command"]


@needs_bwrap
@pytest.mark.parametrize("content", [b"{not json", b"[]"])
async def test_a_settings_file_that_cannot_be_read_counts_as_looser(
    tree: Tree, content: bytes
) -> None:
    _claude_settings(tree)
    local = tree.ws / ".claude" / "settings.local.json"
    local.write_bytes(content)
    reached: list[str] = []
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls, reached=reached)
    assert result.denial is not None and reached == []
    assert any(f"cannot read {local}" in text for text in _toasts(actions)), _toasts(actions)


NOT_LISTS = {
    "denyWrite-number": {"sandbox": {"filesystem": {"denyWrite": 3}}},
    "filesystem-string": {"sandbox": {"filesystem": "/"}},
    "allow-number": {"permissions": {"allow": 5}},
    "additionalDirectories-string": {"permissions": {"additionalDirectories": "/"}},
}


@needs_bwrap
@pytest.mark.parametrize("shape", NOT_LISTS)
async def test_a_value_that_is_not_a_list_is_a_difference_never_a_crash(
    tree: Tree, shape: str
) -> None:
    _claude_settings(tree)
    (tree.ws / ".claude" / "settings.local.json").write_text(
        json.dumps(NOT_LISTS[shape]), encoding="utf-8"
    )
    reached: list[str] = []
    calls = [{"command": UNREADABLE, "permission_mode": "default"}, {"command": "ls"}]
    (unreadable, plain), actions = await _session(tree, calls, reached=reached)
    assert unreadable.denial is not None and "internal" not in unreadable.denial.reason
    assert plain.denial is None and reached == ["ls"]
    assert any("not a list" in text or "not an object" in text for text in _toasts(actions))
    line = write_guard.status_line(str(tree.ws), _options(tree))
    assert line.startswith("shell writes: NONE as write-guard's policy says"), line


@needs_bwrap
async def test_a_null_list_is_taken_as_none_as_claude_code_takes_it(tree: Tree) -> None:
    # Claude Code reads `allowWrite: null` as no entries (`|| []`): the project's still hold.
    _claude_settings(tree)
    local = {"sandbox": {"filesystem": {"allowWrite": None, "denyWrite": None}}}
    (tree.ws / ".claude" / "settings.local.json").write_text(json.dumps(local), encoding="utf-8")
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls)
    assert result.denial is None and _toasts(actions) == []
    line = write_guard.status_line(str(tree.ws), _options(tree))
    assert line.startswith("shell writes: Claude Code's sandbox"), line


@needs_bwrap
async def test_a_subagent_stricter_than_the_project_policy_does_not_get_claude_codes_sandbox(
    tree: Tree,
) -> None:
    # Claude Code's sandbox is built from the main agent's policy: the workspace writable,
    # where a read-only reviewer may write nothing.
    _claude_settings(tree)
    reached: list[str] = []
    write = python_write("src/x.py")
    calls = [
        {"command": write, "permission_mode": "default", "agent_id": "a1"},
        {"command": write, "permission_mode": "default"},
    ]
    reviewer = AgentInfo(id="a1", name="r", type="reviewer")
    (subagent, main), _actions = await _session(
        tree, calls, reached=reached, agents=(reviewer,), agent_presets={"reviewer": "read-only"}
    )
    assert subagent.denial is not None
    assert main.denial is None and reached == [write]


@needs_bwrap
async def test_a_route_leaving_claude_codes_sandbox_mid_session_is_said_once_and_in_the_denial(
    tree: Tree,
) -> None:
    _claude_settings(tree)
    _value, _command, difference = _narrowed(tree)
    calls = _narrowing_between(tree, "default", {"command": UNREADABLE + " "})
    (first, left, again), actions = await _session(tree, calls)
    assert first.denial is None
    assert left.denial is not None and again.denial is not None
    reason = left.denial.reason
    assert difference in reason and "hookchain install" in reason, reason
    assert "no OS sandbox" not in reason
    said = [text for text in _toasts(actions) if difference in text]
    assert len(said) == 1, _toasts(actions)  # once per mismatch, not per call


@needs_bwrap
async def test_a_mismatch_said_at_session_start_is_not_said_again_per_call(tree: Tree) -> None:
    value, _command, difference = _narrowed(tree)
    write_sandbox_settings(str(tree.ws), value)
    calls = [{"command": UNREADABLE, "permission_mode": "default"}] * 2
    _results, actions = await _session(tree, [dict(call) for call in calls])
    assert len([text for text in _toasts(actions) if difference in text]) == 1


def _managed(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An administrator's settings folder of the tree's own, in place of the platform's."""
    import write_guard._claude_sandbox as claude_sandbox

    folder = tree.root / "managed"
    (folder / "managed-settings.d").mkdir(parents=True)
    path = folder / "managed-settings.json"
    monkeypatch.setitem(claude_sandbox.MANAGED_SETTINGS, sys.platform, str(path))
    return folder


@needs_bwrap
async def test_managed_drop_in_files_are_read_over_the_managed_file(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    _claude_settings(tree)
    folder = _managed(tree, monkeypatch)
    (folder / "managed-settings.json").write_text("{}", encoding="utf-8")
    drop_in = {"sandbox": {"excludedCommands": ["python3"]}}
    (folder / "managed-settings.d" / "50-tools.json").write_text(json.dumps(drop_in))
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls)
    assert result.denial is not None
    assert any("excludedCommands" in text for text in _toasts(actions)), _toasts(actions)


@needs_bwrap
async def test_managed_enabled_platforms_without_this_one_switch_claude_codes_sandbox_off(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    _claude_settings(tree)
    folder = _managed(tree, monkeypatch)
    managed = {"sandbox": {"enabledPlatforms": ["windows"]}}
    (folder / "managed-settings.json").write_text(json.dumps(managed), encoding="utf-8")
    calls = [{"command": "ls -la", "permission_mode": "bypassPermissions"}]
    (result,), _actions = await _session(tree, calls)
    # Off here: write-guard's own wrapper confines the command.
    assert result.updated_input is not None and "bwrap" in result.updated_input["command"]


@needs_bwrap
@pytest.mark.parametrize("config_dir", [None, "config"])
async def test_a_relative_path_in_the_users_settings_is_taken_from_their_config_dir(
    tree: Tree, config_dir: str | None
) -> None:
    # Claude Code takes `../ws` in the user's settings from their config dir (~/.claude):
    # home/ws, outside the policy's roots, not the workspace beside home.
    _claude_settings(tree)
    home = tree.root / "home"
    folder = home / ".claude" if config_dir is None else home / config_dir
    folder.mkdir(parents=True, exist_ok=True)
    user = {"sandbox": {"filesystem": {"allowWrite": ["../ws"]}}}
    (folder / "settings.json").write_text(json.dumps(user), encoding="utf-8")
    env = {} if config_dir is None else {"CLAUDE_CONFIG_DIR": str(folder)}
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls, env=env)
    assert result.denial is not None
    said = f"allowWrite also allows {home / 'ws'}"
    assert any(said in text for text in _toasts(actions)), _toasts(actions)


@needs_bwrap
async def test_a_path_with_spaces_around_it_is_taken_as_claude_code_trims_it(tree: Tree) -> None:
    _claude_settings(tree)
    local = {"sandbox": {"filesystem": {"allowWrite": [" ../out "]}}}
    (tree.ws / ".claude" / "settings.local.json").write_text(json.dumps(local), encoding="utf-8")
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls)
    assert result.denial is not None
    said = f"allowWrite also allows {tree.root / 'out'}"
    assert any(said in text for text in _toasts(actions)), _toasts(actions)


@needs_bwrap
async def test_a_relative_path_in_the_managed_settings_is_taken_from_claude_codes_folder(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code takes a managed relative path from the folder it runs in: `build` is the
    # workspace's, which the policy lets write already.
    _claude_settings(tree)
    folder = _managed(tree, monkeypatch)
    managed = {"sandbox": {"filesystem": {"allowWrite": ["build"]}}}
    (folder / "managed-settings.json").write_text(json.dumps(managed), encoding="utf-8")
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls)
    assert _toasts(actions) == []
    assert result.denial is None


@needs_bwrap
async def test_the_settings_are_read_where_claude_code_reads_them_not_at_the_policy_root(
    tree: Tree,
) -> None:
    # The policy's root is the workspace; Claude Code runs in a project inside it and reads
    # that project's .claude/, where the settings are looser.
    _claude_settings(tree)
    app = tree.ws / "app"
    write_sandbox_settings(str(app), _expected(tree))
    loose = {"sandbox": {"excludedCommands": ["python3"]}}
    (app / ".claude" / "settings.local.json").write_text(json.dumps(loose), encoding="utf-8")
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    env = {"CLAUDE_PROJECT_DIR": str(app)}
    (result,), _actions = await _session(tree, calls, env=env, workspace_root=str(tree.ws))
    assert result.denial is not None


@needs_bwrap
async def test_paths_spelled_as_claude_code_reads_them_are_compared_as_it_reads_them(
    tree: Tree,
) -> None:
    # `//abs` is /abs, a trailing `/**` the folder, a glob in allowWrite skipped on Linux, a
    # path within the workspace adds nothing: the same sandbox, so the route stays.
    value = _expected(tree)
    files = value["filesystem"]
    files["denyWrite"] = ["/" + path for path in files["denyWrite"]]
    files["denyRead"] = [path + "/**" for path in files["denyRead"]]
    files["allowWrite"] += [str(tree.root / "out" / "*.txt"), str(tree.ws / "build")]
    write_sandbox_settings(str(tree.ws), value)
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls)
    assert result.denial is None and _toasts(actions) == []


# -- Claude Code's command line: --settings, --add-dir, --setting-sources, --managed-settings ----


def _launches(tree: Tree) -> dict[str, tuple[list[str], str]]:
    """Per shape, a command line that widens Claude Code's sandbox beside the settings files
    (or changes which of them count), and the words the difference is said in."""
    out, flags = str(tree.root / "out"), tree.root / "flags.json"
    flags.write_text(json.dumps({"sandbox": {"filesystem": {"allowWrite": [out]}}}))
    inside = tree.ws / "flags.json"
    inside.write_text("{}", encoding="utf-8")
    return {
        "add-dir": (["--add-dir", out], f"Claude Code was started with --add-dir {out}"),
        "add-dir-equals": ([f"--add-dir={out}"], f"started with --add-dir {out}"),
        "add-dir-several": (
            ["--add-dir", str(tree.ws), out, "-p", "go"],
            f"started with --add-dir {tree.ws}, {out}:",
        ),
        "settings-file": (["--settings", str(flags)], f"allowWrite also allows {out}"),
        "settings-relative": (["--settings", "../flags.json"], f"allowWrite also allows {out}"),
        "settings-inline": (
            ["--settings", '{"sandbox": {"excludedCommands": ["python3"]}}'],
            'excludedCommands runs ["python3"] outside the sandbox',
        ),
        "settings-inline-relative": (
            ["--settings", '{"sandbox": {"filesystem": {"allowWrite": ["x"]}}}'],
            "allowWrite also allows x",
        ),
        "settings-where-commands-write": (
            ["--settings", str(inside)],
            f"--settings {inside} lies where commands may write",
        ),
        "settings-gone": (
            ["--settings", str(tree.root / "gone.json")],
            f"cannot read {tree.root / 'gone.json'}",
        ),
        "setting-sources": (
            ["--setting-sources", "user"],
            "started with --setting-sources user: which settings count then is not compared",
        ),
        "managed-settings": (["--managed-settings", "{}"], "started with --managed-settings {}"),
    }


LAUNCHES = (
    "add-dir", "add-dir-equals", "add-dir-several", "settings-file", "settings-relative",
    "settings-inline", "settings-inline-relative", "settings-where-commands-write",
    "settings-gone", "setting-sources", "managed-settings",
)  # fmt: skip


@needs_bwrap
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("shape", LAUNCHES)
@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
async def test_a_command_line_that_widens_claude_codes_sandbox_is_not_counted_on(
    tree: Tree, shape: str, mode: str
) -> None:
    _claude_settings(tree)
    flags, said = _launches(tree)[shape]
    reached: list[str] = []
    calls = [{"command": UNREADABLE, "permission_mode": mode}]
    (result,), actions = await _session(tree, calls, reached=reached, launched=flags)
    assert result.denial is not None and reached == []
    assert said in result.denial.reason, result.denial.reason
    assert any(said in text and "differ" in text for text in _toasts(actions)), _toasts(actions)


@needs_bwrap
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize(
    "flags",
    [
        ["-p", "fix the --add-dir docs", "--model", "opus"],
        ["--settings", '{"model": "opus"}'],
        ["-p", "go", "--", "--add-dir", "/"],
    ],
)
async def test_a_command_line_that_leaves_claude_codes_sandbox_as_the_files_say_keeps_it(
    tree: Tree, flags: list[str]
) -> None:
    _claude_settings(tree)
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls, launched=flags)
    assert _toasts(actions) == []
    assert result.denial is None and result.updated_input is None


@needs_bwrap
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
async def test_a_settings_file_given_on_the_command_line_is_compared_as_it_changes(
    tree: Tree,
) -> None:
    _claude_settings(tree)
    flags = tree.root / "flags.json"
    flags.write_text("{}", encoding="utf-8")
    out = str(tree.root / "out")

    def widen() -> None:
        flags.write_text(json.dumps({"sandbox": {"filesystem": {"allowWrite": [out]}}}))

    calls = [
        {"command": UNREADABLE, "permission_mode": "default"},
        {"command": UNREADABLE, "permission_mode": "default", "before": widen},
    ]
    (first, widened), _actions = await _session(tree, calls, launched=["--settings", str(flags)])
    assert first.denial is None
    assert widened.denial is not None and f"allowWrite also allows {out}" in widened.denial.reason


@needs_bwrap
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
async def test_without_a_record_of_the_sessions_claude_code_the_route_does_not_hold(
    tree: Tree,
) -> None:
    # At the session start Claude Code may not have written it yet: nothing is said then;
    # each command needs it.
    _claude_settings(tree)
    calls = [{"command": UNREADABLE, "permission_mode": "default"}]
    (result,), actions = await _session(tree, calls, launched=None)
    assert result.denial is not None
    folder = tree.root / "home" / ".claude" / "sessions"
    said = f"cannot tell how Claude Code was started: no running Claude Code process in {folder}"
    assert said in result.denial.reason, result.denial.reason
    [toast] = _toasts(actions)
    assert said in toast


def _record(folder: Path, pid: int, start: str) -> None:
    (folder / "sessions").mkdir(parents=True, exist_ok=True)
    record = {"pid": pid, "sessionId": "s", "procStart": start}
    (folder / "sessions" / f"{pid}.json").write_text(json.dumps(record), encoding="utf-8")


@needs_bwrap
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("record", ["another-start", "ended"])
async def test_a_record_of_a_process_that_is_not_the_sessions_is_not_taken(
    tree: Tree, record: str
) -> None:
    # A pid used again by another process, or one whose process ended: its command line is
    # not the session's Claude Code's.
    _claude_settings(tree)
    config = tree.root / "home" / ".claude"
    if record == "ended":
        with running_claude(config, "other") as pid:
            pass
        _record(config, pid, "1")
        claude: Any = contextlib.nullcontext()
    else:
        claude = running_claude(config, "s", record=False)
    with claude as pid:
        if pid is not None:
            _record(config, pid, "1")  # not its start time
        calls = [{"command": UNREADABLE, "permission_mode": "default"}]
        (result,), _actions = await _session(tree, calls, launched=None)
    assert result.denial is not None and "cannot tell how Claude Code was started" in (
        result.denial.reason
    )


@needs_bwrap
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
async def test_the_record_folder_is_read_again_only_when_it_changes(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    import write_guard._claude_sandbox as claude_sandbox

    _claude_settings(tree)
    read: list[str] = []
    session_argvs = claude_sandbox.session_argvs

    def counted(folder: str, session_id: str) -> tuple[tuple[str, ...], ...]:
        read.append(session_id)
        return session_argvs(folder, session_id)

    monkeypatch.setattr(claude_sandbox, "session_argvs", counted)
    config = tree.root / "home" / ".claude"
    sessions = config / "sessions"

    def aged() -> None:
        _age(sessions, 60)  # older than the doubt window of a change within a clock tick

    later: list[Any] = []

    def another_starts() -> None:
        later.append(running_claude(config, "other", ["--add-dir", "/"]))
        later[0].__enter__()
        aged()
        os.utime(sessions)  # its record just made

    with running_claude(config, "s"):
        aged()
        calls = [
            {"command": UNREADABLE, "permission_mode": "default"},
            {"command": UNREADABLE + " ", "permission_mode": "default"},
            {"command": UNREADABLE, "permission_mode": "default", "before": another_starts},
        ]
        results, _actions = await _session(tree, calls, launched=None)
    later[0].__exit__(None, None, None)
    assert [result.denial is None for result in results] == [True, True, True]
    # One read at the session start, kept for the commands while the folder stays the same;
    # one more after the change.
    assert len(read) == 2, read


def test_status_says_plainly_where_claude_codes_command_line_cannot_be_read() -> None:
    from write_guard._claude_sandbox import ClaudeSettings
    from write_guard._routes import Facts, status_line

    held = ClaudeSettings(on=True)
    facts = Facts(claude=held, bwrap_reason="bubblewrap", bwrap_works=True, command_line=False)
    line = status_line(facts)
    assert line.startswith("shell writes: Claude Code's sandbox, in every permission mode")
    assert "Claude Code's command line cannot be read on this platform" in line
    assert "--add-dir, --settings, --setting-sources or --managed-settings" in line
    assert "may widen its sandbox unseen" in line
