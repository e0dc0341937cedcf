"""`install --harness codex|gemini`: safe merges into config.toml and settings.json."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from cli_kit import hookchain

from framework.claude_code.install import InstallError, apply
from framework.codex import install as codex
from framework.gemini import install as gemini

PY = "/usr/bin/python3"
CLIENT = "/opt/hookchain/_client.py"
USER_TOML = """# my own settings
model = "o4"

[[hooks.PreToolUse]]
matcher = "Bash"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "my-audit-hook"
"""


def test_codex_install_keeps_the_persons_config_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(USER_TOML)
    plan = codex.plan_install(path, python=PY, client=CLIENT)
    assert plan.changed and plan.after.startswith(USER_TOML)
    parsed = tomllib.loads(plan.after)
    pre = parsed["hooks"]["PreToolUse"]
    assert pre[0]["hooks"][0]["command"] == "my-audit-hook"
    ours = pre[1]["hooks"][0]
    assert ours["command"] == f"{PY} -S {CLIENT} codex:PreToolUse # hookchain"
    assert parsed["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3
    assert "+[[hooks.Stop]]" in plan.diff()
    backup = apply(plan)
    assert backup is not None and backup.read_text() == USER_TOML
    again = codex.plan_install(path, python=PY, client=CLIENT)
    assert not again.changed


def test_codex_uninstall_removes_only_hookchains_blocks(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(USER_TOML)
    apply(codex.plan_install(path, python=PY, client=CLIENT))
    apply(codex.plan_trust(path, {f"{path}:pre_tool_use:1:0": "sha256:ab"}))
    assert codex.recorded_trust(path.read_text()) == {f"{path}:pre_tool_use:1:0": "sha256:ab"}
    apply(codex.plan_uninstall(path, path))
    assert path.read_text() == USER_TOML


SANDBOX = {
    "sandbox_mode": "workspace-write",
    "sandbox_workspace_write": {"writable_roots": ["/w"], "exclude_slash_tmp": True},
}


def test_codex_install_merges_plugins_settings_and_uninstall_takes_them_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(USER_TOML)
    plan = codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX})
    parsed = tomllib.loads(plan.after)
    assert {key: parsed[key] for key in SANDBOX} == SANDBOX
    assert parsed["model"] == "o4" and USER_TOML in plan.after
    assert plan.plugins is not None and len(plan.plugins.added) == 3
    apply(plan)
    again = codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX})
    assert not again.changed
    # A plugin that could not be asked keeps what install wrote for it; one that asks for
    # nothing now has its values taken out.
    kept = codex.plan_install(
        path, python=PY, client=CLIENT, plugin_settings={}, unchanged_plugins=frozenset({"wg"})
    )
    assert not kept.changed
    gone = codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={})
    assert "sandbox_mode" not in tomllib.loads(gone.after) and gone.after.startswith(USER_TOML)
    apply(codex.plan_uninstall(path, path))
    assert path.read_text() == USER_TOML


def test_codex_install_keeps_the_persons_own_sandbox_setting(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('sandbox_mode = "danger-full-access"\n' + USER_TOML)
    plan = codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX})
    parsed = tomllib.loads(plan.after)
    assert parsed["sandbox_mode"] == "danger-full-access"
    assert parsed["sandbox_workspace_write"]["writable_roots"] == ["/w"]
    assert plan.plugins is not None
    assert [kept.key for kept in plan.plugins.kept] == [("sandbox_mode",)]
    # A table of the person's that the dotted keys would reopen: refused, said how.
    path.write_text(USER_TOML + "\n[sandbox_workspace_write]\nnetwork_access = true\n")
    with pytest.raises(InstallError, match="set those keys in your table by hand"):
        codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX})


def test_codex_trust_entries_of_another_file_survive_an_uninstall(tmp_path: Path) -> None:
    user, project = tmp_path / "config.toml", tmp_path / "proj" / ".codex" / "config.toml"
    apply(
        codex.plan_trust(user, {f"{user}:stop:0:0": "sha256:1", f"{project}:stop:0:0": "sha256:2"})
    )
    apply(codex.plan_untrust(user, project))
    assert codex.recorded_trust(user.read_text()) == {f"{user}:stop:0:0": "sha256:1"}


def test_codex_refuses_what_it_cannot_merge_safely(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("hooks = { PreToolUse = [] }\n")
    with pytest.raises(InstallError, match="inline"):
        codex.plan_install(path, python=PY, client=CLIENT)
    path.write_text("model = \n")
    with pytest.raises(InstallError, match="not valid TOML"):
        codex.plan_install(path, python=PY, client=CLIENT)
    apply_text = codex.hooks_block(python=PY, client=CLIENT).rsplit("# <<<", 1)[0]
    path.write_text(apply_text)  # the end marker was deleted by hand
    with pytest.raises(InstallError, match="lost a marker"):
        codex.plan_install(path, python=PY, client=CLIENT)
    with pytest.raises(InstallError, match="not Codex events"):
        codex.plan_install(tmp_path / "new.toml", ("BeforeTool",), python=PY, client=CLIENT)


def test_codex_hook_trust_is_read_from_the_app_servers_answer() -> None:
    answer = {
        "id": 2,
        "result": {
            "data": [
                {
                    "hooks": [
                        {"key": "k1", "eventName": "preToolUse", "command": "x # hookchain",
                         "currentHash": "sha256:1", "trustStatus": "untrusted"},
                        {"key": "k2", "eventName": "stop", "command": "x # hookchain",
                         "currentHash": "sha256:2", "trustStatus": "trusted"},
                        {"key": "k3", "eventName": "stop", "command": "theirs",
                         "currentHash": "sha256:3", "trustStatus": "untrusted"},
                    ]
                }
            ]
        },
    }  # fmt: skip
    hooks = codex._hooks_of(answer)
    assert [hook.key for hook in codex.untrusted_ours(hooks)] == ["k1"]


MINE = {"matcher": "write_file", "hooks": [{"type": "command", "command": "mine"}]}
GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "hooks": {"BeforeTool": [MINE]},
}


def test_gemini_install_merges_with_ms_timeouts_and_uninstalls_only_ours(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(GEMINI_SETTINGS))
    plan = gemini.plan_install(path, python=PY, client=CLIENT)
    after = json.loads(plan.after)
    before_tool = after["hooks"]["BeforeTool"]
    assert before_tool[0] == MINE
    assert before_tool[1]["matcher"] == "*"
    ours = before_tool[1]["hooks"][0]
    assert ours["command"].endswith(" gemini:BeforeTool # hookchain") and ours["timeout"] == 30_000
    assert "matcher" not in after["hooks"]["BeforeAgent"][0]
    assert after["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 2000
    apply(plan)
    assert not gemini.plan_install(path, python=PY, client=CLIENT).changed
    apply(gemini.plan_uninstall(path))
    assert json.loads(path.read_text()) == GEMINI_SETTINGS


def test_gemini_folder_trust_problem_is_named(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    (project / ".gemini").mkdir(parents=True)
    (home / ".gemini").mkdir(parents=True)
    apply(gemini.plan_install(project / ".gemini" / "settings.json", python=PY, client=CLIENT))
    env = {"HOME": str(home)}
    problem = gemini.trust_problem(project, env)
    assert problem is not None and "trusted folder" in problem
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(project): "TRUST_FOLDER"})
    )
    assert gemini.trust_problem(project, env) is None
    (home / ".gemini" / "trustedFolders.json").unlink()
    (home / ".gemini" / "settings.json").write_text(
        '{"security": {"folderTrust": {"enabled": false}}}'
    )
    assert gemini.trust_problem(project, env) is None


def test_codex_a_value_changed_inside_hookchains_block_is_neither_reset_nor_dropped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(USER_TOML)
    apply(codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX}))
    text = path.read_text()
    edited = text.replace('sandbox_mode = "workspace-write"', 'sandbox_mode = "read-only"')
    assert edited != text
    path.write_text(edited)
    # Install rewrites the block and uninstall removes it: either would lose the edit.
    for attempt in (
        lambda: codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX}),
        lambda: codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={}),
        lambda: codex.plan_uninstall(path, path),
    ):
        with pytest.raises(InstallError, match=r"sandbox_mode.*'read-only'.*move its line above"):
            attempt()
    assert path.read_text() == edited
    # Moved out of the block, the value is the person's: kept, reported, left by uninstall.
    mine = 'sandbox_mode = "read-only"\n'
    path.write_text(mine + edited.replace(mine, ""))
    plan = codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX})
    assert plan.plugins is not None
    assert [kept.key for kept in plan.plugins.kept] == [("sandbox_mode",)]
    apply(plan)
    assert tomllib.loads(path.read_text())["sandbox_mode"] == "read-only"
    apply(codex.plan_uninstall(path, path))
    assert tomllib.loads(path.read_text()) == tomllib.loads(mine + USER_TOML)
    assert not list(tmp_path.glob("*.hookchain.json"))


def test_codex_an_install_from_before_the_record_reads_its_block(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(USER_TOML)
    apply(codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX}))
    (record,) = tmp_path.glob("*.hookchain.json")
    record.unlink()
    again = codex.plan_install(path, python=PY, client=CLIENT, plugin_settings={"wg": SANDBOX})
    assert again.after == path.read_text() and again.ledger is not None
    apply(again)
    assert record.exists()
    apply(codex.plan_uninstall(path, path))
    assert path.read_text() == USER_TOML and not record.exists()


@pytest.mark.parametrize("harness", ["codex", "gemini"])
def test_install_says_why_the_plugins_could_not_be_asked(harness: str, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / ".codex")}
    env["HOOKCHAIN_LOG_LEVEL"] = "bogus"
    done = hookchain(["install", "--harness", harness, "--dry-run"], tmp_path, env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "plugins not asked for their commands and settings" in done.stderr
    assert "HOOKCHAIN_LOG_LEVEL" in done.stderr
