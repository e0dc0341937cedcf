"""The built-in command groups and the plugins' commands reach the CLI through one hook."""

from __future__ import annotations

import types
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from framework import hookimpl
from framework.cli import app as cli_app
from framework.core.loading import Candidate


def _names(target: typer.Typer) -> set[str]:
    return {command.name or "" for command in target.registered_commands}


def _plugin(name: str, **commands: Any) -> types.ModuleType:
    module = types.ModuleType(name)

    @hookimpl
    def register_cli(app: typer.Typer) -> None:
        for command, fn in commands.items():
            app.command(command)(fn)

    module.register_cli = register_cli  # type: ignore[attr-defined]
    return module


def test_built_in_command_groups_implement_the_register_cli_hook() -> None:
    for name, module in cli_app.BUILTIN_COMMANDS.items():
        hook = getattr(module, "register_cli", None)
        assert hook is not None, name
        assert hasattr(hook, "hookchain_impl"), f"{name}: register_cli is not a @hookimpl"


def test_add_commands_runs_built_ins_and_plugins_and_skips_a_broken_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def hello() -> None:
        typer.echo("hello from a plugin")

    def broken_hook(app: typer.Typer) -> None:
        raise RuntimeError("no commands today")

    broken = types.ModuleType("broken_commands")
    broken.register_cli = hookimpl(broken_hook)  # type: ignore[attr-defined]

    def unimportable() -> Any:
        raise ImportError("missing_dependency")

    candidates = [
        Candidate(name="broken-cli", module="broken_commands", load=lambda: broken),
        Candidate(name="greeter", module="greeter", load=lambda: _plugin("greeter", hello=hello)),
        Candidate(name="missing", module="missing", load=unimportable),
    ]
    monkeypatch.setattr(cli_app, "_command_candidates", lambda: candidates)
    target = typer.Typer()
    cli_app.add_commands(target)

    names = _names(target)
    assert {"replay", "check", "new-plugin", "hook", "install", "status"} <= names
    assert "hello" in names
    err = capsys.readouterr().err
    assert "plugin 'broken-cli' could not add its commands: RuntimeError: no commands today" in err
    assert "plugin 'missing' could not add its commands: ImportError" in err
    result = CliRunner().invoke(target, ["hello"])
    assert result.exit_code == 0
    assert "hello from a plugin" in result.output
