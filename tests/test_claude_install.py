"""`hookchain install` / `uninstall`: merge, backup, idempotence, dry-run diff, http entries."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from framework import _client
from framework.claude_code import http as _http
from framework.claude_code import install as inst

OTHER_HOOK = {"type": "command", "command": "echo keep-me", "timeout": 5}
EXISTING: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [OTHER_HOOK]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}


def handlers(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [h for group in settings["hooks"].get(event, []) for h in group["hooks"]]


def test_merge_adds_one_command_per_event_with_timeout_and_empty_matcher() -> None:
    merged = inst.merge(EXISTING, python="/opt/py/bin/python3", client="/x/_client.py")
    for event in inst.DEFAULT_EVENTS:
        ours = [h for h in handlers(merged, event) if inst.is_ours(h)]
        assert len(ours) == 1, event
        assert ours[0]["command"] == f"/opt/py/bin/python3 -S /x/_client.py {event} # hookchain"
        assert ours[0]["timeout"] == inst.TIMEOUTS_S.get(event, inst.DEFAULT_TIMEOUT_S)
        group = next(g for g in merged["hooks"][event] if ours[0] in g["hooks"])
        assert group["matcher"] == ""
    assert handlers(merged, "SessionEnd")[0]["timeout"] <= 2


def test_merge_keeps_every_other_key_and_hook() -> None:
    merged = inst.merge(EXISTING)
    assert merged["model"] == "opus"
    assert merged["permissions"] == EXISTING["permissions"]
    assert merged["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [OTHER_HOOK]}
    assert merged["hooks"]["Notification"] == EXISTING["hooks"]["Notification"]
    assert EXISTING["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [OTHER_HOOK]}]


def test_merge_is_idempotent_and_remove_restores_the_original() -> None:
    once = inst.merge(EXISTING, ["PreToolUse", "Stop"])
    twice = inst.merge(once, ["PreToolUse", "Stop"])
    assert once == twice
    assert inst.remove(twice) == EXISTING


def test_a_handler_sharing_a_group_with_ours_survives_uninstall() -> None:
    shared = {"hooks": {"Stop": [{"hooks": [OTHER_HOOK, inst.command_handler("Stop")]}]}}
    assert inst.remove(shared) == {"hooks": {"Stop": [{"hooks": [OTHER_HOOK]}]}}


def test_the_command_runs_the_client_with_the_absolute_interpreter_and_minus_s() -> None:
    command = inst.client_command("PreToolUse")
    words = shlex.split(command, comments=True)
    assert words == [sys.executable, "-S", str(Path(_client.__file__).resolve()), "PreToolUse"]
    assert Path(words[0]).is_absolute()


def test_an_interpreter_without_an_absolute_path_is_refused() -> None:
    for python in ("python3", "", "bin/python"):
        with pytest.raises(inst.InstallError, match="not absolute"):
            inst.client_command("Stop", python=python)


def test_bad_event_names_and_bad_settings_are_refused() -> None:
    with pytest.raises(inst.InstallError, match="not a Claude Code hook event"):
        inst.merge({}, ["PreToolUse; rm -rf /"])
    with pytest.raises(inst.InstallError, match="not an object"):
        inst.merge({"hooks": []})
    with pytest.raises(inst.InstallError, match="not a list"):
        inst.merge({"hooks": {"Stop": {}}})


def test_http_entries_take_the_token_from_the_environment_and_keep_command_only_events() -> None:
    merged = inst.merge({}, transport="http", port=4567)
    pre = handlers(merged, "PreToolUse")[0]
    assert pre == {
        "type": "http",
        "url": "http://127.0.0.1:4567/hook?event=PreToolUse",
        "headers": {"Authorization": "Bearer $HOOKCHAIN_TOKEN"},
        "allowedEnvVars": ["HOOKCHAIN_TOKEN"],
        "timeout": inst.DEFAULT_TIMEOUT_S,
    }
    assert handlers(merged, "SessionStart")[0]["type"] == "command"
    assert inst.remove(merged) == {"hooks": {}}


def test_fail_closed_keeps_pre_tool_use_on_the_command_client() -> None:
    merged = inst.merge({}, transport="http", port=1, keep_pre_tool_use_on_command=True)
    assert handlers(merged, "PreToolUse")[0]["type"] == "command"
    assert handlers(merged, "PostToolUse")[0]["type"] == "http"


def test_http_is_refused_below_2_1_63_and_warned_when_unknown() -> None:
    assert inst.parse_version("2.1.41 (Claude Code)") == (2, 1, 41)
    with pytest.raises(inst.InstallError, match=r"2\.1\.63"):
        inst.check_http_support((2, 1, 41))
    assert inst.check_http_support((2, 1, 63)) is None
    assert inst.check_http_support((3, 0, 0)) is None
    warning = inst.check_http_support(None)
    assert warning is not None
    assert "2.1.63" in warning


def test_apply_writes_atomically_and_keeps_a_backup(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    original = json.dumps(EXISTING)
    path.write_text(original)
    plan = inst.plan_install(path)
    assert plan.changed
    backup = inst.apply(plan)
    assert backup is not None
    assert backup.read_text() == original
    assert backup.stat().st_mode & 0o077 == 0
    installed = json.loads(path.read_text())
    assert inst.remove(installed) == EXISTING
    again = inst.plan_install(path)
    assert not again.changed
    assert inst.apply(again) is None
    assert list(path.parent.glob(".settings-*")) == []


def test_invalid_json_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{ not json")
    with pytest.raises(inst.InstallError, match="not valid JSON"):
        inst.plan_install(path)
    assert path.read_text() == "{ not json"


def test_uninstall_of_a_file_without_our_hooks_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert not inst.plan_uninstall(path).changed
    path.write_text(json.dumps(EXISTING, indent=4))
    assert not inst.plan_uninstall(path).changed


def test_cli_dry_run_prints_a_diff_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer

    from framework.claude_code import cli as _cli_claude

    app = typer.Typer()
    _cli_claude.register_cli(app)
    monkeypatch.chdir(tmp_path)
    # Install creates the host's own folders: these, not the user's.
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOOKCHAIN_RUNTIME_DIR", str(tmp_path / "rt"))
    runner = CliRunner()
    shown = runner.invoke(app, ["install", "--dry-run", "--events", "Stop"])
    assert shown.exit_code == 0, shown.output
    assert "+++" in shown.output
    assert '"Stop"' in shown.output
    settings = tmp_path / ".claude" / "settings.local.json"  # the default scope: local
    assert not settings.exists()
    done = runner.invoke(app, ["install", "--events", "Stop", "--events", "PreToolUse"])
    assert done.exit_code == 0, done.output
    assert set(json.loads(settings.read_text())["hooks"]) == {"Stop", "PreToolUse"}
    assert (
        "already up to date"
        in runner.invoke(app, ["install", "--events", "Stop", "--events", "PreToolUse"]).output
    )
    removed = runner.invoke(app, ["uninstall"])
    assert removed.exit_code == 0, removed.output
    assert json.loads(settings.read_text()) == {"hooks": {}}


def test_the_installed_command_runs_in_a_shell(tmp_path: Path) -> None:
    """The marker is a shell comment: the command Claude Code runs is exactly the client."""
    env = {"HOOKCHAIN_RUNTIME_DIR": str(tmp_path / "rt"), "HOOKCHAIN_CONNECT_DEADLINE": "0"}
    fake_client = tmp_path / "client.py"
    fake_client.write_text("import sys; print(sys.argv[1:], sys.flags.no_site)")
    command = inst.client_command("Stop", client=str(fake_client))
    done = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "['Stop'] 1"


def test_precompiling_writes_the_client_bytecode_where_imports_look() -> None:
    import importlib.util

    from framework import _client_core

    written = inst.precompile_client()
    assert written == Path(importlib.util.cache_from_source(_client_core.__file__))
    assert written.stat().st_mtime >= Path(_client_core.__file__).stat().st_mtime


def cli_app() -> Any:
    import typer

    from framework.claude_code import cli as _cli_claude

    app = typer.Typer()
    _cli_claude.register_cli(app)
    return app


def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str | None) -> None:
    """A `claude` on PATH that prints `version`, or none at all; HOME and the data dir private."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if version is not None:
        script = bin_dir / "claude"
        script.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("HOOKCHAIN_UNREACHABLE", raising=False)
    monkeypatch.delenv("HOOKCHAIN_HTTP_PORT", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("HOOKCHAIN_RUNTIME_DIR", str(tmp_path / "rt"))
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")


def installed(tmp_path: Path) -> dict[str, Any]:
    settings: dict[str, Any] = json.loads(
        (tmp_path / "project" / ".claude" / "settings.local.json").read_text()
    )
    return settings


def test_cli_refuses_http_on_a_claude_code_older_than_2_1_63(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path, monkeypatch, "2.1.62")
    done = CliRunner().invoke(cli_app(), ["install", "--transport", "http"])
    assert done.exit_code == 2
    assert "Claude Code 2.1.62 has no http hooks" in done.output
    assert not (tmp_path / "project" / ".claude").exists()
    assert not (tmp_path / "data").exists()


def test_cli_http_install_keeps_pre_tool_use_on_command_when_fail_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path, monkeypatch, "2.1.63")
    done = CliRunner().invoke(cli_app(), ["install", "--transport", "http", "--fail-closed"])
    assert done.exit_code == 0, done.output
    settings = installed(tmp_path)
    pre = handlers(settings, "PreToolUse")[0]
    assert pre["command"] == inst.client_command("PreToolUse")
    post = handlers(settings, "PostToolUse")[0]
    assert post["type"] == "http"
    token_file = _http.token_path(tmp_path / "data")
    assert token_file.read_text().strip() not in json.dumps(settings)
    assert f'export HOOKCHAIN_TOKEN="$(cat {token_file})"' in done.output
    assert "PreToolUse stays on the command client" in done.output


def test_cli_reads_fail_closed_from_hookchain_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path, monkeypatch, "2.2.0")
    monkeypatch.setenv("HOOKCHAIN_UNREACHABLE", "closed")
    done = CliRunner().invoke(cli_app(), ["install", "--transport", "http"])
    assert done.exit_code == 0, done.output
    assert handlers(installed(tmp_path), "PreToolUse")[0]["type"] == "command"
    assert handlers(installed(tmp_path), "Stop")[0]["type"] == "http"


def test_cli_warns_when_claude_is_not_found_and_user_scope_writes_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path, monkeypatch, None)
    done = CliRunner().invoke(cli_app(), ["install", "--user", "--transport", "http"])
    assert done.exit_code == 0, done.output
    assert "could not run `claude --version`" in done.output
    user_file = tmp_path / "home" / ".claude" / "settings.json"
    assert handlers(json.loads(user_file.read_text()), "PreToolUse")[0]["type"] == "http"
    assert not (tmp_path / "project" / ".claude").exists()


def test_scopes_name_their_files_and_the_default_is_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path, monkeypatch, "2.2.0")
    claude = tmp_path / "project" / ".claude"
    assert CliRunner().invoke(cli_app(), ["install"]).exit_code == 0
    assert (claude / "settings.local.json").exists()
    assert not (claude / "settings.json").exists()
    assert CliRunner().invoke(cli_app(), ["install", "--scope", "project"]).exit_code == 0
    assert (claude / "settings.json").exists()
    assert CliRunner().invoke(cli_app(), ["install", "--scope", "user"]).exit_code == 0
    assert (tmp_path / "home" / ".claude" / "settings.json").exists()
    refused = CliRunner().invoke(cli_app(), ["install", "--scope", "team"])
    assert refused.exit_code == 2
    assert "project, local, user" in refused.output


def test_install_from_a_subfolder_changes_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path, monkeypatch, "2.2.0")
    root = tmp_path / "project"
    (root / ".git").mkdir()
    (root / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(root / "src" / "deep")
    assert CliRunner().invoke(cli_app(), ["install"]).exit_code == 0
    assert (root / ".claude" / "settings.local.json").exists()
    assert not (root / "src" / "deep" / ".claude").exists()
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(other))
    assert CliRunner().invoke(cli_app(), ["install"]).exit_code == 0
    assert (other / ".claude" / "settings.local.json").exists()


def test_unknown_events_are_refused_with_the_known_list_and_a_suggestion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path, monkeypatch, "2.2.0")
    bogus = CliRunner().invoke(cli_app(), ["install", "--events", "Bogus"])
    assert bogus.exit_code == 2
    assert "'Bogus' is not a Claude Code hook event" in bogus.output
    assert "PreToolUse" in bogus.output and "SubagentStart" in bogus.output
    lower = CliRunner().invoke(cli_app(), ["install", "--events", "pretooluse"])
    assert lower.exit_code == 2
    assert "did you mean PreToolUse?" in lower.output
    assert not (tmp_path / "project" / ".claude").exists()


def test_the_original_settings_are_backed_up_once(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    original = json.dumps(EXISTING, indent=4)
    path.write_text(original)
    backup = inst.apply(inst.plan_install(path, ("Stop",)))
    assert backup is not None
    inst.apply(inst.plan_install(path, ("Stop", "PreToolUse")))
    inst.apply(inst.plan_uninstall(path))
    assert backup.read_text() == original


def test_plugins_json_lists_commands_and_install_writes_their_command_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from framework.cli.app import app as hookchain_app

    fake_claude(tmp_path, monkeypatch, "2.2.0")
    listed = CliRunner().invoke(hookchain_app, ["plugins", "--json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output)["commands"] == {"loop-breaker": "loop-breaker"}
    done = CliRunner().invoke(cli_app(), ["install"])
    assert done.exit_code == 0, done.output
    command = tmp_path / "project" / ".claude" / "commands" / "loop-breaker.md"
    assert command.read_text().startswith("---\ndescription:")
    theirs = tmp_path / "project" / ".claude" / "commands" / "other.md"
    theirs.write_text("a command of the team's own\n")
    removed = CliRunner().invoke(cli_app(), ["uninstall"])
    assert removed.exit_code == 0, removed.output
    assert not command.exists()
    assert theirs.exists()


def test_install_makes_the_projects_plugin_folder_private_before_a_sandbox_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sandbox keeping commands out of a path that does not exist yet holds an empty file
    # there while a command runs; the host could not make the folder in its place.
    fake_claude(tmp_path, monkeypatch, "2.2.0")
    folder = tmp_path / "project" / ".hookchain"
    assert not folder.exists()
    done = CliRunner().invoke(cli_app(), ["install"])
    assert done.exit_code == 0, done.output
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700


def test_a_user_scope_install_makes_no_plugin_folder_where_it_was_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_claude(tmp_path, monkeypatch, "2.2.0")
    done = CliRunner().invoke(cli_app(), ["install", "--user"])
    assert done.exit_code == 0, done.output
    assert not (tmp_path / "project" / ".hookchain").exists()
