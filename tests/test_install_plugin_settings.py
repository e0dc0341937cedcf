"""Plugins' settings (`harness_settings`) in the file `hookchain install` writes: merged key by
key, recorded beside it, a person's own keys kept and reported, uninstall taking out exactly
what install added."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from framework.claude_code import install as inst
from framework.core import plugin_settings as ps

SANDBOX = {"sandbox": {"enabled": True, "filesystem": {"allowWrite": ["/x"], "denyRead": []}}}


def test_a_first_merge_adds_every_key_and_records_it() -> None:
    merged = ps.merge_plugin_settings({"model": "m"}, {"guard": SANDBOX}, {})
    assert merged.settings == {"model": "m", **SANDBOX}
    assert sorted(ps.dotted(key) for _, key in merged.added) == [
        "sandbox.enabled",
        "sandbox.filesystem.allowWrite",
        "sandbox.filesystem.denyRead",
    ]
    assert merged.ledger is not None
    assert {tuple(e["key"]) for e in merged.ledger["written"]} == {
        ("sandbox", "enabled"),
        ("sandbox", "filesystem", "allowWrite"),
        ("sandbox", "filesystem", "denyRead"),
    }
    assert merged.ledger["created"] == [["sandbox"], ["sandbox", "filesystem"]]


def test_the_persons_keys_are_kept_and_reported_and_uninstall_leaves_them() -> None:
    mine = {"sandbox": {"enabled": False, "excludedCommands": ["docker"]}}
    merged = ps.merge_plugin_settings(mine, {"guard": SANDBOX}, {})
    assert merged.settings["sandbox"]["enabled"] is False
    assert merged.settings["sandbox"]["excludedCommands"] == ["docker"]
    assert merged.settings["sandbox"]["filesystem"] == SANDBOX["sandbox"]["filesystem"]
    [kept] = merged.kept
    assert (kept.plugin, kept.key, kept.theirs, kept.wanted) == (
        "guard",
        ("sandbox", "enabled"),
        False,
        True,
    )
    assert kept.describe() == "kept your sandbox.enabled = false (guard asked for true)"
    assert merged.ledger is not None
    removed = ps.remove_plugin_settings(merged.settings, merged.ledger)
    assert removed.settings == mine
    assert removed.ledger is None


def test_a_key_the_person_set_in_the_other_settings_file_is_kept_too(tmp_path: Path) -> None:
    # Claude Code reads .claude/settings.json with settings.local.json: the local file's value
    # would silently override the person's committed one.
    project, local = tmp_path / ".claude" / "settings.json", tmp_path / ".claude" / "x.json"
    project.parent.mkdir()
    project.write_text(json.dumps({"sandbox": {"enabled": False}}))
    plan = inst.plan_install(
        local, ("Stop",), plugin_settings={"guard": SANDBOX}, elsewhere=(project,)
    )
    assert "enabled" not in json.loads(plan.after)["sandbox"]
    assert plan.plugins is not None
    [kept] = plan.plugins.kept
    assert kept.describe() == (
        f"kept your sandbox.enabled = false in {project} (guard asked for true)"
    )


def test_a_value_the_person_set_equal_is_theirs_and_survives_uninstall() -> None:
    mine = {"sandbox": {"enabled": True}}
    merged = ps.merge_plugin_settings(mine, {"guard": SANDBOX}, {})
    assert merged.kept == []
    assert merged.ledger is not None
    assert ["sandbox", "enabled"] not in [e["key"] for e in merged.ledger["written"]]
    removed = ps.remove_plugin_settings(merged.settings, merged.ledger)
    assert removed.settings == mine


def test_merging_again_changes_nothing_and_a_new_policy_replaces_installs_own_values() -> None:
    first = ps.merge_plugin_settings({}, {"guard": SANDBOX}, {})
    assert first.ledger is not None
    again = ps.merge_plugin_settings(first.settings, {"guard": SANDBOX}, first.ledger)
    assert again.settings == first.settings and again.added == [] and again.kept == []
    assert again.ledger == first.ledger
    wider = {"sandbox": {"enabled": True, "filesystem": {"allowWrite": ["/x", "/y"]}}}
    changed = ps.merge_plugin_settings(first.settings, {"guard": wider}, first.ledger)
    assert changed.settings["sandbox"]["filesystem"] == {"allowWrite": ["/x", "/y"]}
    assert changed.kept == []
    assert [ps.dotted(k) for _, k in changed.removed] == ["sandbox.filesystem.denyRead"]


def test_a_value_the_person_changed_after_install_is_theirs() -> None:
    first = ps.merge_plugin_settings({}, {"guard": SANDBOX}, {})
    assert first.ledger is not None
    edited = json.loads(json.dumps(first.settings))
    edited["sandbox"]["filesystem"]["allowWrite"] = ["/mine"]
    again = ps.merge_plugin_settings(edited, {"guard": SANDBOX}, first.ledger)
    assert again.settings["sandbox"]["filesystem"]["allowWrite"] == ["/mine"]
    assert [k.key for k in again.kept] == [("sandbox", "filesystem", "allowWrite")]
    removed = ps.remove_plugin_settings(edited, first.ledger)
    assert removed.settings == {"sandbox": {"filesystem": {"allowWrite": ["/mine"]}}}
    assert [ps.dotted(k) for _, k in removed.left] == ["sandbox.filesystem.allowWrite"]


def test_a_plugin_that_could_not_be_asked_keeps_what_install_wrote_for_it() -> None:
    first = ps.merge_plugin_settings({}, {"guard": SANDBOX}, {})
    assert first.ledger is not None
    kept = ps.merge_plugin_settings(first.settings, {}, first.ledger, unchanged={"guard"})
    assert kept.settings == first.settings and kept.removed == []
    assert kept.ledger == first.ledger
    gone = ps.merge_plugin_settings(first.settings, {}, first.ledger)
    assert gone.settings == {} and gone.ledger is None


def test_two_plugins_on_one_key_and_a_key_under_hooks_are_refused() -> None:
    with pytest.raises(ps.PluginSettingsError, match="'a' and 'b' both ask for settings key"):
        ps.merge_plugin_settings({}, {"a": {"sandbox": {"enabled": True}}, "b": SANDBOX}, {})
    with pytest.raises(ps.PluginSettingsError, match="plugin 'a' asks for settings key 'hooks"):
        ps.merge_plugin_settings({}, {"a": {"hooks": {"Stop": []}}}, {})


def test_the_record_sits_beside_the_settings_file() -> None:
    local = Path("/p/.claude/settings.local.json")
    assert ps.ledger_path(local) == Path("/p/.claude/settings.local.hookchain.json")


def test_plan_install_and_uninstall_write_and_remove_the_record(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"sandbox": {"enabled": False}, "model": "m"}))
    plan = inst.plan_install(path, ("Stop",), plugin_settings={"guard": SANDBOX})
    assert plan.plugins is not None and [k.key for k in plan.plugins.kept] == [
        ("sandbox", "enabled")
    ]
    inst.apply(plan)
    ledger = ps.ledger_path(path)
    assert ledger.exists() and ledger.stat().st_mode & 0o777 == path.stat().st_mode & 0o777
    assert not inst.plan_install(path, ("Stop",), plugin_settings={"guard": SANDBOX}).changed
    # Plugins that could not be asked (None) leave what install wrote alone.
    unasked = inst.plan_install(path, ("Stop",))
    assert json.loads(unasked.after)["sandbox"]["filesystem"] == SANDBOX["sandbox"]["filesystem"]
    inst.apply(inst.plan_uninstall(path))
    assert not ledger.exists()
    # (An emptied `hooks` stays, as uninstall always left it.)
    assert json.loads(path.read_text()) == {
        "sandbox": {"enabled": False},
        "model": "m",
        "hooks": {},
    }


def test_an_unreadable_record_is_refused_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    ps.ledger_path(path).write_text("{not json")
    with pytest.raises(inst.InstallError, match="records what hookchain install wrote"):
        inst.plan_install(path, ("Stop",), plugin_settings={})


# -- through the CLI, with a plugin from a plugins folder ------------------------------------------

PLUGIN = """
from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="settings-probe", contract=">=1,<2")


@hookimpl
def register(on, options):
    pass


@hookimpl
def harness_settings(harness, scope, project_root):
    if harness == "gemini":
        return {"tools": {"sandbox": True}}
    if harness != "claude-code":
        return None
    return {"sandbox": {"enabled": True, "filesystem": {"allowWrite": [project_root + "/out"]}}}


@hookimpl
def status_line(project_root):
    return "probing " + project_root
"""


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    from framework.claude_code import cli as claude_cli

    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "settings_probe.py").write_text(textwrap.dedent(PLUGIN))
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("HOOKCHAIN_PLUGINS_DIR", str(folder))
    monkeypatch.setenv("HOOKCHAIN_PLUGINS", "settings-probe")
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOOKCHAIN_RUNTIME_DIR", str(tmp_path / "rt"))
    monkeypatch.setenv("HOOKCHAIN_CONNECT_DEADLINE", "0")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    sys.modules.pop("hookchain_local_plugins.settings_probe", None)
    app = typer.Typer()
    claude_cli.register_cli(app)
    return app


def test_install_writes_the_plugins_settings_keeps_the_persons_and_uninstall_undoes_it(
    cli: typer.Typer, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"sandbox": {"enabled": False}}))
    runner = CliRunner()
    done = runner.invoke(cli, ["install", "--events", "Stop"])
    assert done.exit_code == 0, done.output
    written = json.loads(settings.read_text())
    assert written["sandbox"] == {
        "enabled": False,
        "filesystem": {"allowWrite": [f"{project}/out"]},
    }
    assert "wrote settings-probe's settings sandbox.filesystem.allowWrite" in done.output
    assert "kept your sandbox.enabled = false (settings-probe asked for true)" in done.output
    assert f"hookchain: settings-probe: probing {project}" in done.output
    assert (tmp_path / "data").is_dir() and (tmp_path / "rt").stat().st_mode & 0o777 == 0o700
    again = runner.invoke(cli, ["install", "--events", "Stop"])
    assert "already up to date" in again.output
    gone = runner.invoke(cli, ["uninstall"])
    assert gone.exit_code == 0, gone.output
    assert json.loads(settings.read_text()) == {"sandbox": {"enabled": False}, "hooks": {}}
    assert not ps.ledger_path(settings).exists()


def test_status_says_what_each_plugin_says_of_this_project_without_a_host(
    cli: typer.Typer, tmp_path: Path
) -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["status"])
    assert shown.exit_code == 1  # no host runs
    project = tmp_path / "project"
    assert f"this project   {project}" in shown.output
    assert f"settings-probe probing {project}" in shown.output
    as_json = runner.invoke(cli, ["status", "--json"])
    here = json.loads(as_json.output)["here"]
    assert here == {"root": str(project), "plugin_status": {"settings-probe": f"probing {project}"}}


def test_settings_asked_for_a_harness_whose_installer_does_not_merge_them_are_named(
    cli: typer.Typer, tmp_path: Path
) -> None:
    from framework.cli import harnesses

    app = typer.Typer()
    harnesses.register_cli(app)
    done = CliRunner().invoke(app, ["install", "--harness", "gemini"])
    assert done.exit_code == 0, done.output
    assert "plugin settings-probe asks for gemini settings (tools)" in done.output
    written = (tmp_path / "project" / ".gemini" / "settings.json").read_text()
    assert "sandbox" not in written
