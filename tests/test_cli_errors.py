"""A person's errors end in one line naming what, where from and what is accepted; exit 2.

Each case runs the real `hookchain` script; `--debug` (or HOOKCHAIN_LOG_LEVEL=debug) adds the
traceback."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest
from cli_kit import hookchain

TOOL_CALL = '{"tool_use_id": "t1", "tool": "Bash", "input": {"command": "ls"}}'
TRY = ["try", "tool.call", "--payload", TOOL_CALL]

# (id, args, environment, hookchain.toml, what the last line must say)
CASES = [
    ("unknown-store", [*TRY, "--store", "bogus://x"], {}, "", ["'bogus'", "accepted", "memory://"]),
    (
        "relative-sqlite",
        [*TRY, "--store", "sqlite://relative.db"],
        {},
        "",
        ["relative", "sqlite:///"],
    ),
    ("redis-down", [*TRY, "--store", "redis://127.0.0.1:1/0"], {}, "", ["unreachable"]),
    (
        "option-not-json",
        TRY,
        {"HOOKCHAIN_PLUGINS": "write-guard", "WRITE_GUARD_EXTRA_WRITABLE_ROOTS": "not json"},
        "",
        ["WRITE_GUARD_EXTRA_WRITABLE_ROOTS", "from the environment", "JSON"],
    ),
    (
        "option-from-file",
        TRY,
        {"HOOKCHAIN_PLUGINS": "write-guard"},
        "[write-guard]\nextra_writable_roots = 5\n",
        ["extra_writable_roots in", "hookchain.toml [write-guard]", "valid list"],
    ),
    (
        "option-key-typo",
        TRY,
        {"HOOKCHAIN_PLUGINS": "write-guard"},
        '[write-guard]\nextra_writeable_roots = ["/tmp"]\n',
        ["'extra_writeable_roots'", "did you mean 'extra_writable_roots'", "[write-guard]"],
    ),
    (
        "log-level-from-file",
        TRY,
        {},
        '[hookchain]\nlog_level = "loud"\n',
        ["log_level in", "hookchain.toml [hookchain]", "'debug'", "'loud'"],
    ),
    (
        "log-level-from-env",
        TRY,
        {"HOOKCHAIN_LOG_LEVEL": "loud"},
        "",
        ["HOOKCHAIN_LOG_LEVEL (from the environment)", "'warning'"],
    ),
    (
        "setting-key-typo",
        TRY,
        {},
        '[hookchain]\nplugin = ["write-guard"]\n',
        ["unknown option 'plugin'", "did you mean 'plugins'"],
    ),
    ("bad-toml", TRY, {}, "[hookchain\n", ["cannot read", "hookchain.toml", "line 1"]),
    ("unknown-event", ["try", "tool.run", "--payload", "{}"], {}, "", ["'tool.run'", "tool.call"]),
    (
        "unknown-plugin-flag",
        [*TRY, "--plugins", "nosuch"],
        {},
        "",
        ["'nosuch'", "from --plugins", "installed:", "write-guard"],
    ),
    (
        "unknown-plugin-old-flag",
        [*TRY, "--plugin", "write-gaurd"],
        {},
        "",
        ["'write-gaurd'", "did you mean 'write-guard'"],
    ),
    (
        "unknown-plugin-env",
        ["plugins"],
        {"HOOKCHAIN_PLUGINS": "nosuch"},
        "",
        ["'nosuch'", "from HOOKCHAIN_PLUGINS", "installed:"],
    ),
    (
        "unknown-plugin-file",
        ["plugins"],
        {},
        '[hookchain]\nplugins = ["nosuch"]\n',
        ["'nosuch'", "plugins in", "hookchain.toml [hookchain]"],
    ),
    (
        "unknown-disabled-plugin",
        TRY,
        {"HOOKCHAIN_DISABLE_PLUGINS": "write-gard"},
        "",
        ["'write-gard'", "HOOKCHAIN_DISABLE_PLUGINS"],
    ),
    ("unknown-contract", ["check", "--contract", "9.9"], {}, "", ["'9.9'", "--contract", "1.0"]),
    (
        "bad-result",
        [*TRY, "--result", '{"outptu": "x"}'],
        {},
        "",
        ["does not fit tool.call", "outptu", "fields: output, is_error"],
    ),
    (
        "missing-plugins-dir",
        ["--plugins-dir", "no-such-folder", "plugins"],
        {},
        "",
        ["no-such-folder", "not a folder"],
    ),
]


def _last_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    return lines[-1]


@pytest.mark.parametrize(
    ("args", "env", "config", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_a_user_error_is_one_clear_line_and_exit_2(
    tmp_path: Path, args: list[str], env: dict[str, str], config: str, expected: list[str]
) -> None:
    (tmp_path / "hookchain.toml").write_text(config, encoding="utf-8")
    done = hookchain(args, tmp_path, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    last = _last_line(done.stderr)
    assert last.startswith("hookchain: ") or "fix the plugin above" in last, done.stderr
    shown = done.stderr
    for part in expected:
        assert part in shown, f"{part!r} not in {shown!r}"
    # A value read from the file is never said to come from the environment.
    if config and "environment" not in " ".join(expected):
        assert "from the environment" not in shown


@pytest.mark.parametrize("switch", [["--debug"], []], ids=["--debug", "HOOKCHAIN_LOG_LEVEL=debug"])
def test_debugging_shows_the_traceback_too(tmp_path: Path, switch: list[str]) -> None:
    env = {} if switch else {"HOOKCHAIN_LOG_LEVEL": "debug"}
    done = hookchain([*switch, *TRY, "--store", "bogus://x"], tmp_path, env)
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert "StoreError" in done.stderr
    assert _last_line(done.stderr).startswith("hookchain: unknown store URL scheme 'bogus'")


PORT_PLUGIN = textwrap.dedent(
    """
    import socket

    import typer

    from framework import PluginInfo, hookimpl

    plugin = PluginInfo(name="port-user", contract=">=1,<2")


    @hookimpl
    def register(on, options):
        pass


    @hookimpl
    def register_cli(app):
        @app.command("listen")
        def listen(port: int) -> None:
            server = socket.socket()
            server.bind(("127.0.0.1", port))
    """
)


def test_a_busy_port_in_a_plugins_command_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "local"
    folder.mkdir()
    (folder / "port_user.py").write_text(PORT_PLUGIN, encoding="utf-8")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = hookchain(["listen", str(port)], tmp_path, {"HOOKCHAIN_PLUGINS_DIR": str(folder)})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = _last_line(done.stderr)
    assert "in use" in last and "the port is taken" in last


def test_a_bug_still_shows_its_traceback(tmp_path: Path) -> None:
    # Only a person's errors are shortened: a plugin command that crashes is a bug to report.
    folder = tmp_path / "local"
    folder.mkdir()
    source = PORT_PLUGIN.replace('server.bind(("127.0.0.1", port))', 'raise RuntimeError("a bug")')
    (folder / "port_user.py").write_text(source, encoding="utf-8")
    done = hookchain(["listen", "1"], tmp_path, {"HOOKCHAIN_PLUGINS_DIR": str(folder)})
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "RuntimeError: a bug" in done.stderr


def test_a_plugins_command_without_the_plugin_says_how_to_install_it() -> None:
    # Without observer installed, `hookchain observer` is not "Did you mean 'serve'?".
    import typer
    from typer.testing import CliRunner

    from framework.cli.common import HookchainGroup

    app = typer.Typer(cls=HookchainGroup)

    @app.command()
    def serve() -> None: ...

    @app.command()
    def status() -> None: ...

    done = CliRunner().invoke(app, ["observer", "status"])
    assert done.exit_code == 2
    assert "no command 'observer'" in done.output
    assert "a plugin's command appears once the plugin is installed" in done.output
    assert "hookchain plugins install DISTRIBUTION" in done.output
    typo = CliRunner().invoke(app, ["stauts"])
    assert typo.exit_code == 2 and "did you mean 'status'?" in typo.output
