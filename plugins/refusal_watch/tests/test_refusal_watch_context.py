"""prompt.context and session.start through the host: switch, passport and the rule block."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from framework import ContextBlock, ContextResult, FakeClock, Host, PromptContext, SessionStart
from refusal_watch._rule import BLOCK_NAME, RULE_SHA256, RULE_TEXT
from structlog.testing import capture_logs

import refusal_watch

pytestmark = pytest.mark.anyio

VERSION = "2.1.285"


def make_host(tmp_path: Path, env: Mapping[str, str]) -> Host:
    options = {
        "refusal-watch": {
            "passports_dir": str(tmp_path / "passports"),
            "harness_dir": str(tmp_path / "versions"),
        }
    }
    return Host(
        plugins=[refusal_watch],
        entry_points=False,
        store="memory://",
        clock=FakeClock(),
        env=dict(env),
        options=options,
        config={},
    )


def write_passport(tmp_path: Path) -> None:
    passports, versions = tmp_path / "passports", tmp_path / "versions"
    passports.mkdir()
    versions.mkdir()
    binary = versions / VERSION
    binary.write_bytes(b"harness")
    stat = binary.stat()
    document: dict[str, Any] = {
        "version": VERSION,
        "platform": "linux_x64",
        "rule_applied": True,
        "rule_sha256": RULE_SHA256,
        "harness": {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns},
    }
    (passports / f"{VERSION}-linux_x64.json").write_text(json.dumps(document))


async def context(host: Host, *blocks: ContextBlock) -> ContextResult:
    outcome = await host.dispatch(PromptContext(session_id="s1", blocks=blocks))
    result = outcome.result
    assert isinstance(result, ContextResult)
    return result


async def test_rule_block_added_when_switch_on(tmp_path: Path) -> None:
    """T18: with the switch on and no passport the refusalHandling block (> 300 chars) is added."""
    async with make_host(tmp_path, {"CLAUDE_REFUSAL_WATCH": " Yes "}) as host:
        other = ContextBlock(name="memory", text="notes")
        result = await context(host, other)
    assert result.blocks[0] == other
    assert result.blocks[1].name == BLOCK_NAME
    assert result.blocks[1].text == RULE_TEXT
    assert result.blocks[1].by == "refusal-watch"


@pytest.mark.parametrize("value", [None, "", "off", "0"])
async def test_switch_off_leaves_result_alone(tmp_path: Path, value: str | None) -> None:
    """T139: with the switch off the context result comes back as the very same object."""
    env = {} if value is None else {"CLAUDE_REFUSAL_WATCH": value}
    async with make_host(tmp_path, env) as host:
        original = ContextResult(blocks=(ContextBlock(name="a", text="b"),))

        async def terminal(_: Any) -> ContextResult:
            return original

        outcome = await host.dispatch(PromptContext(session_id="s1"), terminal=terminal)
    assert outcome.result is original


async def test_unknown_switch_value_is_named_once(tmp_path: Path) -> None:
    """T18: an unknown switch value adds no text and gives one named diagnostic."""
    with capture_logs() as logs:
        async with make_host(tmp_path, {"CLAUDE_REFUSAL_WATCH": "maybe"}) as host:
            first = await context(host)
            await context(host)
    assert first.blocks == ()
    named = [entry for entry in logs if "[switch-invalid]" in str(entry["event"])]
    assert len(named) == 1
    assert "maybe" not in str(named[0]["event"])


async def test_passport_proves_rule_and_is_read_once(tmp_path: Path) -> None:
    """A valid passport read at session.start means the harness carries the rule: no block."""
    write_passport(tmp_path)
    async with make_host(tmp_path, {"CLAUDE_REFUSAL_WATCH": "1"}) as host:
        await host.dispatch(SessionStart(session_id="s1", harness_version=VERSION))
        (tmp_path / "passports" / f"{VERSION}-linux_x64.json").unlink()
        await host.dispatch(SessionStart(session_id="s2", harness_version=VERSION))
        result = await context(host)
    assert result.blocks == ()


async def test_stale_passport_falls_back_with_diagnostic(tmp_path: Path) -> None:
    """A passport whose harness file changed is stale: one diagnostic, and the block is added."""
    write_passport(tmp_path)
    (tmp_path / "versions" / VERSION).write_bytes(b"harness, patched")
    with capture_logs() as logs:
        async with make_host(tmp_path, {"CLAUDE_REFUSAL_WATCH": "1"}) as host:
            await host.dispatch(SessionStart(session_id="s1", harness_version=VERSION))
            result = await context(host)
    assert [block.name for block in result.blocks] == [BLOCK_NAME]
    assert sum("[passport-stale]" in str(entry["event"]) for entry in logs) == 1


async def test_duplicates_collapse_and_stale_text_is_replaced(tmp_path: Path) -> None:
    """Own-name duplicates collapse at the first one's place; its stale text becomes the rule."""
    async with make_host(tmp_path, {"CLAUDE_REFUSAL_WATCH": "on"}) as host:
        result = await context(
            host,
            ContextBlock(name="a", text="1"),
            ContextBlock(name=BLOCK_NAME, text="old wording"),
            ContextBlock(name="b", text="2"),
            ContextBlock(name=BLOCK_NAME, text="older wording"),
        )
    assert [(block.name, block.text) for block in result.blocks] == [
        ("a", "1"),
        (BLOCK_NAME, RULE_TEXT),
        ("b", "2"),
    ]
