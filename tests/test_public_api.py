"""The public API is small, sorted, pinned, typed and documented in docs/contract.md."""

from __future__ import annotations

import re
from pathlib import Path

import framework

ROOT = Path(__file__).resolve().parents[1]

PINNED = {
    "Action", "AgentInfo", "BudgetExceeded", "CONTRACT_VERSION", "CallNext", "Classic",
    "ClassicResult", "Clock", "CommandReply", "CommandRun", "ContextBlock", "ContextResult",
    "Continue", "ContractError", "Denial", "Drop", "ENGINE_ORIGIN", "ENTRY_POINT_GROUP",
    "EVENT_TYPES", "Engine", "Event", "FakeClock", "HookSpecs", "Host", "HostSettings",
    "HARNESSES", "ToolAction", "describe_tool",
    "KNOWN_CONTRACT_VERSIONS", "LoadedPlugin", "Note", "Outcome", "PERSON_ORIGIN_KINDS",
    "PluginInfo", "PromptContext", "PromptResult", "PromptSubmit", "Registration", "ReplayReport",
    "SessionEnd", "Transcripts", "read_transcripts", "replay_paths",
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
