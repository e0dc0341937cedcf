"""write-guard's sandbox for shell commands under the real Claude Code binary.

Two routes (plugins/write_guard/README.md): `hookchain install` writes Claude Code's own
sandbox settings from write-guard's policy, which hold in every permission mode (Claude Code
checks its rules on the command as written, then runs it in bubblewrap); where the person
keeps Claude Code's sandbox off, write-guard rewrites each Bash command into its own bubblewrap
wrapper (`updatedInput`), which holds only with the permission checks skipped: with them on,
write-guard leaves the command as written and the line analysis decides, failing closed, and
says so. Every effect is checked on disk, and what the model saw in the mock's request log.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from kit import BYPASS, Project, Run, Sandbox, jail
from mock_api import bash, say, tool, write

pytestmark = pytest.mark.slow

WRAPPED = "__write_guard_sandbox"
"""A word of write-guard's own wrapper: in a command, that command was rewritten."""


def python_write(path: str, mode: str = "w") -> str:
    """A write the line analysis cannot see (a program writing by itself): only the OS stops it."""
    return f"python3 -c \"open('{path}', '{mode}').write('x\\n')\""


def guarded(box: Sandbox) -> Project:
    """A project on the rewrite route: the person keeps Claude Code's sandbox off, which
    `hookchain install` keeps (and says so)."""
    project = box.project()
    local = project.path / ".claude" / "settings.local.json"
    local.parent.mkdir(exist_ok=True)
    local.write_text(json.dumps({"sandbox": {"enabled": False}}), encoding="utf-8")
    done = project.install()
    assert "kept your sandbox.enabled = false (write-guard asked for true)" in done.stderr
    assert "write-guard's bwrap rewrite, in bypassPermissions mode only" in done.stdout
    return project


def ok(run: Run) -> Run:
    assert run.code == 0, run.explain()
    return run


def model_saw(run: Run) -> str:
    """Everything sent to the model in the session (the mock's request log)."""
    return json.dumps(run.api.bodies(None))


def test_a_shell_write_outside_fails_in_the_sandbox_and_a_write_inside_works(
    box: Sandbox,
) -> None:
    project = guarded(box)
    target = box.outside / "escaped.txt"
    run = ok(
        project.run(
            "write files",
            [bash(python_write(str(target))), bash("echo inside > inside.txt"), say("ok")],
        )
    )
    escaped, inside = run.tool_results()
    assert escaped.is_error
    assert "Read-only file system" in escaped.text
    assert not target.exists()
    assert not inside.is_error, inside.text
    assert (project.path / "inside.txt").read_text() == "inside\n"
    pre = [json.loads(r["stdout"]) for r in run.hook_responses("PreToolUse")]
    assert all(WRAPPED in p["hookSpecificOutput"]["updatedInput"]["command"] for p in pre)


def test_a_cd_carries_over_to_the_next_call(box: Sandbox) -> None:
    project = guarded(box)
    (project.path / "sub").mkdir()
    run = ok(project.run("go", [bash("cd sub"), bash("echo here > f.txt && pwd"), say("ok")]))
    moved, wrote = run.tool_results()
    assert not moved.is_error and not wrote.is_error, wrote.text
    assert (project.path / "sub" / "f.txt").read_text() == "here\n"
    assert not (project.path / "f.txt").exists()
    assert str(project.path / "sub") in wrote.text


def test_a_protected_file_in_the_workspace_is_read_only_to_bash_and_denied_to_write(
    box: Sandbox,
) -> None:
    project = guarded(box)
    config = project.path / ".git" / "config"
    before = config.read_text()
    script = [
        bash(python_write(".git/config", "a")),
        # Claude Code refuses a Write to a file not read first, before any hook runs.
        tool("Read", {"file_path": str(config)}),
        write(str(config), "[core]\n\thooksPath = /tmp\n"),
        say("ok"),
    ]
    run = ok(project.run("configure git", script))
    shell, _read, file_tool = run.tool_results()
    assert shell.is_error and "Read-only file system" in shell.text
    assert file_tool.is_error and "protected-path" in file_tool.text
    assert config.read_text() == before


def test_git_add_and_commit_still_work(box: Sandbox) -> None:
    project = guarded(box)
    (project.path / "new.txt").write_text("new\n")
    run = ok(project.run("commit", [bash("git add new.txt && git commit -q -m add"), say("ok")]))
    [result] = run.tool_results()
    assert not result.is_error, result.text
    log = project.git("log", "--format=%s").stdout.split()
    assert log == ["add", "first"]


def test_a_commondir_left_by_a_command_is_undone_before_the_persons_next_git(
    box: Sandbox,
) -> None:
    # `.git/commondir` points git at a common dir of the command's making (its config runs a
    # program on `git status`); written by a program, so only the sandbox can see it.
    project = guarded(box)
    marker = box.outside / "ran.txt"
    plant = (
        "mkdir -p ev && cp -r .git/HEAD .git/objects .git/refs ev/ && "
        f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > ev/config && "
        + python_write(".git/commondir").replace("x\\n", "../ev")
    )
    run = ok(project.run("plant", [bash(plant), say("ok")]))
    [planted] = run.tool_results()
    assert "undid" in planted.text and "commondir" in planted.text, planted.text
    assert not (project.path / ".git" / "commondir").exists()
    assert (project.path / ".git" / "commondir.write-guard-undone").read_text() == "../ev"
    assert any("undid" in text for text in run.system_messages()), run.system_messages()
    # The person's next git, in the same confinement as Claude Code: it runs nothing planted.
    person = subprocess.run(
        [*jail(box.root), "--chdir", str(project.path), "--", "git", "status", "--short"],
        env=box.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert person.returncode == 0, person.stderr
    assert not marker.exists()


def test_a_held_reset_shows_its_code_to_the_person_only_and_a_script_reset_is_restorable(
    box: Sandbox,
) -> None:
    project = guarded(box)
    readme = project.path / "README.md"
    readme.write_text("work in progress\n")
    (project.path / "reset.py").write_text(
        "import subprocess\nsubprocess.run(['git', 'reset', '-q', '--hard'], check=True)\n"
    )
    run = ok(
        project.run("clean up", [bash("git reset --hard"), bash("python3 reset.py"), say("ok")])
    )
    held, scripted = run.tool_results()
    assert held.is_error and "git-gate" in held.text
    codes = [m for text in run.system_messages() for m in re.findall(r"approve (\S+)", text)]
    assert codes, run.system_messages()
    for code in codes:
        assert code not in model_saw(run)
    # The gate cannot see git run by a script: the work is lost, then brought back.
    assert not scripted.is_error, scripted.text
    assert readme.read_text() == "# proj\n"
    listed = project.hookchain("restore")
    assert listed.returncode == 0, listed.stderr
    snapshot = listed.stdout.split()[0]
    restored = project.hookchain("restore", snapshot)
    assert restored.returncode == 0, restored.stderr
    assert readme.read_text() == "work in progress\n"


def test_work_and_history_come_back_after_a_script_deletes_the_objects(box: Sandbox) -> None:
    project = guarded(box)
    readme = project.path / "README.md"
    readme.write_text("work in progress\n")
    (project.path / "wipe.py").write_text(
        "import shutil, subprocess\n"
        "subprocess.run(['git', 'reset', '-q', '--hard'], check=True)\n"
        "shutil.rmtree('.git/objects')\n"
    )
    run = ok(project.run("clean up", [bash("python3 wipe.py"), say("ok")]))
    (wiped,) = run.tool_results()
    assert not wiped.is_error, wiped.text
    assert readme.read_text() == "# proj\n" and not (project.path / ".git" / "objects").exists()
    listed = project.hookchain("restore")
    assert listed.returncode == 0, listed.stderr
    restored = project.hookchain("restore", listed.stdout.split()[0])
    assert restored.returncode == 0, restored.stderr
    assert "objects the repository had lost" in restored.stdout
    assert readme.read_text() == "work in progress\n"
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project.path, capture_output=True,
                         text=True, timeout=30, check=False, env=project.sandbox.env)  # fmt: skip
    assert log.returncode == 0 and log.stdout.strip(), log.stderr


def test_the_agent_cannot_stop_the_host_and_the_next_call_is_still_guarded(box: Sandbox) -> None:
    project = guarded(box)
    target = box.outside / "after-stop.txt"
    run = ok(
        project.run(
            "stop it",
            [bash("hookchain serve --stop"), bash(python_write(str(target))), say("ok")],
        )
    )
    stop, after = run.tool_results()
    assert stop.is_error and "control-plane" in stop.text
    assert after.is_error and "Read-only file system" in after.text
    assert not target.exists()
    assert box.status() is not None


# -- Claude Code's permission checks on: its own sandbox, from write-guard's policy ---------------


MODES = ["default", "acceptEdits", "plan"]
"""Claude Code's permission modes that check its rules before a command runs."""


def permissioned(project: Project) -> Project:
    """The person allows `echo` and `python3` (a trusted workspace, so the rules count)."""
    project.settings(permissions={"allow": ["Bash(echo:*)", "Bash(python3:*)"]})
    project.trust()
    return project


def installed(box: Sandbox) -> Project:
    """A project with nothing but `hookchain install`: it writes Claude Code's sandbox."""
    project = box.project()
    done = project.install()
    assert "wrote write-guard's settings sandbox.enabled" in done.stdout, done.stdout
    assert "shell writes: Claude Code's sandbox, in every permission mode" in done.stdout
    local = json.loads((project.path / ".claude" / "settings.local.json").read_text())
    assert local["sandbox"]["enabled"] is True
    return project


@pytest.mark.parametrize("mode", [*MODES, BYPASS])
def test_under_claude_codes_sandbox_an_allow_rule_matches_and_the_sandbox_holds(
    box: Sandbox, mode: str
) -> None:
    project = permissioned(installed(box))
    target = box.outside / "escaped.txt"
    config = project.path / ".git" / "config"
    before = config.read_text()
    script = [
        bash("echo allowed"),
        bash(python_write(str(target))),
        bash(python_write(".git/config", "a")),
        bash(python_write("inside.txt")),
        bash(python_write(str(target)), dangerouslyDisableSandbox=True),
        say("ok"),
    ]
    run = ok(project.run("go", script, permission_mode=mode))
    echo, outside, protected, inside, escape = run.tool_results()
    assert not echo.is_error and echo.text.strip() == "allowed", echo.text
    assert outside.is_error and "Read-only file system" in outside.text
    assert protected.is_error and "Read-only file system" in protected.text
    assert not inside.is_error, inside.text
    assert (project.path / "inside.txt").exists()
    assert escape.is_error and "Read-only file system" in escape.text
    assert not target.exists()
    assert config.read_text() == before
    for answer in run.hook_responses("PreToolUse"):
        assert WRAPPED not in answer.get("stdout", "")
    assert not [m for m in run.system_messages() if "NOT enforced" in m]


def told_differs(run: Run, project: Project, difference: str) -> None:
    """`hookchain status` names the difference and what to run; so does the session start's
    message, when the host answered it in time (a loaded machine can make the hook client
    skip it, failing open; plugins/write_guard/tests check the message itself)."""
    status = project.hookchain("status")
    assert "differ from write-guard's policy" in status.stdout, status.stdout
    assert difference in status.stdout and "hookchain install" in status.stdout
    answered = [
        r
        for r in run.hook_responses("SessionStart")
        if "host unreachable" not in r.get("output", "")
    ]
    if answered:
        told = [m for m in run.system_messages() if "differ from write-guard's policy" in m]
        assert told and difference in told[0], run.system_messages()
        assert "hookchain install" in told[0] and "hookchain status" in told[0]


@pytest.mark.parametrize("mode", ["default", BYPASS])
def test_claude_codes_sandbox_settings_wider_than_the_policy_are_not_counted_on(
    box: Sandbox, mode: str
) -> None:
    """The person widens `allowWrite` after install: Claude Code's sandbox would let the write
    outside through, and write-guard's wrapper cannot run inside it (its mounts of what that
    sandbox hides fail), so in every mode the line analysis decides, failing closed, and the
    person is told what differs."""
    project = permissioned(installed(box))
    local = project.path / ".claude" / "settings.local.json"
    settings = json.loads(local.read_text())
    settings["sandbox"]["filesystem"]["allowWrite"].append(str(box.outside))
    local.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    target = box.outside / "escaped.txt"
    script = [bash("echo allowed"), bash(python_write(str(target))), say("ok")]
    run = ok(project.run("go", script, permission_mode=mode))
    echo, outside = run.tool_results()
    assert not echo.is_error and echo.text.strip() == "allowed", echo.text
    assert outside.is_error and not target.exists(), outside.text
    assert "no-sandbox" in outside.text, outside.text
    for answer in run.hook_responses("PreToolUse"):
        assert WRAPPED not in answer.get("stdout", "")
    told_differs(run, project, f"allowWrite also allows {box.outside}")


def test_a_users_own_allow_write_merged_into_claude_codes_sandbox_is_not_counted_on(
    box: Sandbox,
) -> None:
    """Claude Code merges the user's `~/.claude/settings.json` into the project's sandbox: an
    `allowWrite` there lets a write outside through it (install's settings left as written)."""
    project = permissioned(installed(box))
    user = box.root / "home" / ".claude" / "settings.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    settings = json.loads(user.read_text()) if user.exists() else {}
    settings["sandbox"] = {"filesystem": {"allowWrite": [str(box.outside)]}}
    user.write_text(json.dumps(settings), encoding="utf-8")
    target = box.outside / "escaped.txt"
    run = ok(
        project.run("go", [bash(python_write(str(target))), say("ok")], permission_mode=BYPASS)
    )
    [outside] = run.tool_results()
    assert outside.is_error and "no-sandbox" in outside.text, outside.text
    assert not target.exists()
    told_differs(run, project, f"allowWrite also allows {box.outside}")


@pytest.mark.parametrize("widening", ["add-dir", "settings"])
def test_a_command_line_that_widens_claude_codes_sandbox_is_not_counted_on(
    box: Sandbox, widening: str
) -> None:
    """`claude --add-dir DIR` and `claude --settings FILE` widen Claude Code's sandbox beside
    every settings file (without write-guard's check the write outside went through, real
    binary): write-guard reads the session's command line (Claude Code's record of it in
    ~/.claude/sessions), so the line analysis decides and the person is told."""
    project = permissioned(installed(box))
    flags = ["--add-dir", str(box.outside)]
    if widening == "settings":
        file = box.root / "flag-settings.json"
        file.write_text(json.dumps({"sandbox": {"filesystem": {"allowWrite": [str(box.outside)]}}}))
        flags = ["--settings", str(file)]
    target = box.outside / "escaped.txt"
    script = [bash("echo allowed"), bash(python_write(str(target))), say("ok")]
    run = ok(project.run("go", script, permission_mode=BYPASS, flags=flags))
    echo, outside = run.tool_results()
    assert not echo.is_error and echo.text.strip() == "allowed", echo.text
    assert outside.is_error and "no-sandbox" in outside.text, outside.text
    assert not target.exists()
    said = (
        f"started with --add-dir {box.outside}"
        if widening == "add-dir"
        else f"allowWrite also allows {box.outside}"
    )
    assert said in outside.text, outside.text


def test_uninstall_takes_claude_codes_sandbox_settings_out_again(box: Sandbox) -> None:
    project = installed(box)
    local = project.path / ".claude" / "settings.local.json"
    removed = project.hookchain("uninstall")
    assert removed.returncode == 0, removed.stderr
    assert "took out write-guard's settings sandbox." in removed.stdout
    assert "sandbox" not in json.loads(local.read_text())
    assert not (project.path / ".claude" / "settings.local.hookchain.json").exists()


@pytest.mark.parametrize("mode", MODES)
def test_with_permission_checks_on_and_claude_codes_sandbox_off_the_line_analysis_decides(
    box: Sandbox, mode: str
) -> None:
    """A rewritten command would be checked against the person's rules instead of theirs:
    write-guard leaves it as written, refuses what the analysis cannot read, and says so."""
    project = permissioned(guarded(box))
    target = box.outside / "escaped.txt"
    script = [bash("echo allowed"), bash(python_write(str(target))), bash("echo again"), say("ok")]
    run = ok(project.run("go", script, permission_mode=mode))
    echo, unread, again = run.tool_results()
    assert not echo.is_error and echo.text.strip() == "allowed", echo.text
    assert not again.is_error and again.text.strip() == "again", again.text
    assert unread.is_error and "no-sandbox" in unread.text
    assert not target.exists()
    for answer in run.hook_responses("PreToolUse"):
        assert WRAPPED not in answer.get("stdout", "")
    warned = [m for m in run.system_messages() if "checks its permission rules" in m]
    assert len(warned) == 1, run.system_messages()
    assert f"({mode} mode)" in warned[0] and "NOT enforced by the OS" in warned[0]
