"""What a person sees: readable lines on a terminal, JSON in a pipe, conventional help."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from cli_kit import hookchain, on_terminal

LOGGER = textwrap.dedent(
    """
    from framework import PluginInfo, hookimpl

    plugin = PluginInfo(name="chatty", contract=">=1,<2")


    @hookimpl
    def register(on, options):
        async def talk(engine, event, call_next):
            engine.ui.log("a detail nobody needs", level="debug")
            engine.ui.log("something worth a look", level="warning")
            return await call_next(event)

        on("tool.call", talk)
    """
)
CALL = '{"tool_use_id": "t1", "tool": "Bash", "input": {"command": "ls"}}'


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "chatty.py").write_text(LOGGER, encoding="utf-8")
    return tmp_path


def env(home: Path) -> dict[str, str]:
    return {"HOOKCHAIN_PLUGINS_DIR": str(home / "local"), "HOOKCHAIN_PLUGINS": "chatty"}


def test_on_a_terminal_try_is_indented_and_logs_are_readable_lines(home: Path) -> None:
    code, shown = on_terminal(["try", "tool.call", "--payload", CALL], home, env(home))
    assert code == 0, shown
    assert "hookchain: warning: chatty: something worth a look" in shown
    assert "a detail nobody needs" not in shown  # warnings and errors only by default
    assert '{"event"' not in shown and '"level"' not in shown
    assert '\n  "result": {' in shown  # indented JSON, one key per line


def test_in_a_pipe_try_prints_one_json_line_and_logs_json(home: Path) -> None:
    done = hookchain(["try", "tool.call", "--payload", CALL], home, env(home))
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert json.loads(line)["result"]["is_error"] is False
    [record] = [json.loads(text) for text in done.stderr.splitlines()]
    assert record["event"] == "something worth a look" and record["level"] == "warning"


COMMANDS = [
    [],
    ["try"],
    ["plugins"],
    ["plugins", "install"],
    ["plugins", "uninstall"],
    ["replay"],
    ["check"],
    ["new-plugin"],
    ["hook"],
    ["serve"],
    ["status"],
    ["install"],
    ["uninstall"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "hookchain")
def test_every_command_has_h_and_conventional_metavars(tmp_path: Path, command: list[str]) -> None:
    done = hookchain([*command, "-h"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Usage: hookchain" in done.stdout
    # Python types are not metavars: no <bool>, <str>, <list[Path]>, {paths}.
    assert not re.search(r"<\w+(\[\w+\])?>", done.stdout), done.stdout
    assert not re.search(r"\{[a-z_]+\}", done.stdout), done.stdout


def test_check_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    code, shown = on_terminal(["check", "write-guard"], tmp_path)
    assert code == 0, shown
    assert "checking write-guard" in shown
    assert "all plugins pass" in shown


def test_check_fails_for_a_plugin_that_does_not_load_with_the_settings(tmp_path: Path) -> None:
    # The suite checks a plugin with its defaults; the person's hookchain.toml would unload it.
    (tmp_path / "hookchain.toml").write_text(
        '[write-guard]\nextra_writeable_roots = ["/tmp"]\n', encoding="utf-8"
    )
    done = hookchain(["check", "write-guard", "--json"], tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    [failure] = report["not_loaded"]
    assert failure["name"] == "write-guard"
    assert "did you mean 'extra_writable_roots'" in failure["error"]
    table = hookchain(["check", "write-guard"], tmp_path)
    assert table.returncode == 1
    assert "not loaded with your settings" in table.stdout
