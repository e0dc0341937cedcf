"""The public API is small, sorted, pinned, typed and documented in docs/contract.md."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import framework

ROOT = Path(__file__).resolve().parents[1]

PINNED = {
    "Action", "AgentInfo", "BudgetExceeded", "CONTRACT_VERSION", "CallNext", "Classic",
    "ClassicResult", "Clock", "CommandReply", "CommandRun", "ContextBlock", "ContextResult",
    "Continue", "ContractError", "Denial", "Drop", "ENGINE_ORIGIN", "ENTRY_POINT_GROUP",
    "EVENT_TYPES", "Engine", "EnginePort", "Event", "FakeClock", "Handler", "HookSpecs", "Host",
    "HostSettings", "On",
    "HARNESSES", "ToolAction", "describe_tool",
    "KNOWN_CONTRACT_VERSIONS", "LoadedPlugin", "Note", "Outcome", "PERSON_ORIGIN_KINDS",
    "PluginInfo", "PromptContext", "PromptResult", "PromptSubmit", "Registration", "ReplayReport",
    "SessionCache", "SessionEnd", "Transcripts", "read_transcripts", "replay_paths",
    "SessionStart", "SettingsError", "StepStream", "Store", "StoreBackend", "StoreError",
    "StreamChunk", "SystemClock", "ToolCall", "ToolResult", "TurnComplete", "TurnResult",
    "TurnStart", "TurnStep", "build_event", "data_dir", "hookimpl", "is_valid_result",
    "load_settings", "neutral_result", "open_backend", "refusal", "tap",
}  # fmt: skip


def _isort_style(name: str) -> tuple[int, str]:
    # The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions.
    if name.isupper():
        return (0, name)
    return (1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_pinned() -> None:
    assert framework.__all__ == sorted(framework.__all__, key=_isort_style)
    assert set(framework.__all__) == PINNED


def test_every_public_name_is_documented_in_the_contract() -> None:
    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    missing = [name for name in framework.__all__ if not re.search(rf"`[^`]*\b{name}\b", text)]
    assert missing == []


def test_every_hook_a_plugin_may_implement_is_documented_in_the_contract() -> None:
    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    hooks = [name for name in vars(framework.HookSpecs) if not name.startswith("_")]
    assert {"register", "register_cli", "harness_settings", "status_line"} <= set(hooks)
    missing = [name for name in hooks if f"`{name}(" not in text]
    assert missing == []


def test_every_module_opens_with_a_one_line_docstring() -> None:
    for path in sorted((ROOT / "framework").rglob("*.py")):
        if "_scaffold" in path.parts:
            continue
        source = path.read_text(encoding="utf-8").lstrip()
        assert source.startswith('"""'), path
        lines = source.splitlines()
        first = lines[0]
        # A one-line summary of the module's job; details, if any, after a blank line.
        one_line = first.endswith('"""') and len(first) > 6
        summary = first.endswith(".") and len(lines) > 1 and lines[1].strip() == ""
        assert one_line or summary, f"{path}: {first}"


def test_the_package_is_typed() -> None:
    assert (ROOT / "framework" / "py.typed").exists()


def test_import_framework_loads_no_replay_and_no_claude_code_module() -> None:
    # A fresh interpreter: this test process has long imported everything.
    probe = (
        "import sys, framework; "
        "print('\\n'.join(m for m in sys.modules if m.startswith('framework.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(done.stdout.split())
    assert "framework.core.host" in loaded  # the probe sees what the face imports
    adapters = sorted(
        name
        for name in loaded
        if name.startswith(("framework.replay", "framework.claude_code", "framework.cli"))
    )
    assert adapters == []


def test_the_lazy_replay_names_resolve_and_are_listed() -> None:
    from framework.replay.reader import read_transcripts
    from framework.replay.runner import ReplayReport

    assert framework.read_transcripts is read_transcripts
    assert framework.ReplayReport is ReplayReport
    assert set(framework.__all__) <= set(dir(framework))
    with pytest.raises(AttributeError, match="no_such_name"):
        framework.no_such_name  # noqa: B018


def test_a_host_loading_every_plugin_imports_no_command_line_code() -> None:
    # Each replay worker and each warm host loads the plugins: their `hookchain` commands
    # (typer, the dashboard server) are for the command line, imported when it is built.
    probe = (
        "import sys; from framework import Host; host = Host(store='memory://'); host.load(); "
        "print(*[p.name for p in host.loaded()]); "
        "print(*sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click') "
        "or m.endswith(('._cli', '._dashboard_server'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    plugins, command_line = [*done.stdout.splitlines(), "", ""][:2]
    assert set(plugins.split()) >= {"loop-breaker", "observer", "refusal-watch", "write-guard"}
    assert command_line.split() == []
