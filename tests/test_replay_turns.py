"""One turn definition live and replayed: the same session gives a plugin the same turn ids.

The live side is the real `ClaudeBridge` fed the hook payloads Claude Code sent for a recorded
session. They are made from the transcript's own records, independently of the replay's rebuild:
its `hook_progress` records say where PreToolUse, PostToolUse and Stop fired, its typed prompts
are the UserPromptSubmit calls, and the subagent file's calls run under the subagent's id and
end with its SubagentStop.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from framework import (
    CallNext,
    Engine,
    Event,
    Host,
    PluginInfo,
    ToolCall,
    TurnComplete,
    TurnStart,
    hookimpl,
)
from framework.claude_code.bridge import ClaudeBridge
from framework.core.turns import agent_turn_id, compaction_ends_turn, main_turn_id
from framework.replay.runner import replay_paths

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def corpus_file(prefix: str) -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    return next(CORPUS.glob(f"{prefix}*.jsonl"))


class TurnProbe:
    """A plugin that writes down, per session, each turn id it sees and the turn of each call."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str | None, str]] = []
        self.calls: dict[str, str | None] = {}
        self.current: str | None = None
        self.reasons: list[str] = []

    def module(self) -> types.ModuleType:
        module = types.ModuleType("turn_probe")
        module.plugin = PluginInfo(name="turn-probe", contract=">=1,<2")  # type: ignore[attr-defined]

        async def on_turn(engine: Engine, event: Event, call_next: CallNext) -> Any:
            assert isinstance(event, TurnStart | TurnComplete)
            self.turns.append((event.kind, event.agent_id, event.turn_id))
            if isinstance(event, TurnStart) and event.agent_id is None:
                self.current = event.turn_id
            if isinstance(event, TurnComplete):
                self.reasons.append(event.reason)
            return await call_next(event)

        async def on_tool(engine: Engine, event: ToolCall, call_next: CallNext) -> Any:
            if event.agent_id is None:
                self.calls[event.tool_use_id] = self.current
            return await call_next(event)

        @hookimpl
        def register(on: Any, options: Any) -> None:
            on("turn.start", on_turn)
            on("turn.complete", on_turn)
            on("tool.call", on_tool)

        module.register = register  # type: ignore[attr-defined]
        return module

    def main_turns(self) -> list[str]:
        """Main-loop turn ids in the order they first appear."""
        return list(dict.fromkeys(t for _, agent, t in self.turns if agent is None))

    def agent_turns(self) -> set[str]:
        return {t for kind, agent, t in self.turns if agent is not None and kind == "turn.complete"}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def typed_prompt(record: dict[str, Any]) -> str | None:
    """What the person typed, when a user record is a prompt Claude Code sent to its hooks."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isCompactSummary"):
        return None
    content = record["message"]["content"]
    if isinstance(content, list):
        if not all(b.get("type") == "text" for b in content):
            return None  # tool results
        content = "\n".join(b["text"] for b in content)
    text = str(content).strip()
    wrapped = text.startswith(("<", "[Request interrupted", "Caveat:", "Stop hook feedback"))
    return None if wrapped or not text else text


def payloads(main: Path, agent: Path, agent_type: str) -> Iterator[dict[str, Any]]:
    """The hook payloads of the recorded session, in the order Claude Code sent them."""
    main_records = records(main)
    session = next(r["sessionId"] for r in main_records if r.get("sessionId"))
    uses: dict[str, dict[str, Any]] = {}
    for record in [*main_records, *records(agent)]:
        content = record.get("message", {}).get("content") if record.get("message") else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                uses[block["id"]] = block
    base = {"session_id": session, "cwd": main_records[0].get("cwd", "")}
    done: set[tuple[str, Any]] = set()
    stopped_once = False

    def tool_events(rows: list[dict[str, Any]], agent_id: str | None) -> Iterator[dict[str, Any]]:
        for row in rows:
            data = row.get("data") or {}
            event, use_id = data.get("hookEvent"), row.get("toolUseID")
            if row.get("type") != "progress" or event not in ("PreToolUse", "PostToolUse"):
                continue
            if (event, use_id) in done or use_id not in uses:
                continue  # one call per event, however many hooks it ran
            done.add((event, use_id))
            block = uses[use_id]
            payload = {
                **base,
                "hook_event_name": event,
                "tool_name": block["name"],
                "tool_input": block["input"],
                "tool_use_id": use_id,
            }
            if agent_id is not None:
                payload |= {"agent_id": agent_id, "agent_type": agent_type}
            if event == "PostToolUse":
                payload["tool_response"] = {"stdout": "ok"}
            yield payload

    agent_rows = records(agent)
    agent_id = next(r["agentId"] for r in agent_rows if r.get("agentId"))
    yield {**base, "hook_event_name": "SessionStart", "source": "startup"}
    for record in main_records:
        prompt = typed_prompt(record)
        if prompt is not None:
            yield {**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt}
            stopped_once = False
        data = record.get("data") or {}
        if record.get("type") == "progress" and data.get("hookEvent") == "Stop":
            if ("Stop", record.get("toolUseID")) not in done:
                done.add(("Stop", record.get("toolUseID")))
                yield {**base, "hook_event_name": "Stop", "stop_hook_active": stopped_once}
                stopped_once = True
            continue
        metadata = record.get("compactMetadata")
        if record.get("subtype") == "compact_boundary":
            trigger = metadata.get("trigger") if isinstance(metadata, dict) else None
            yield {**base, "hook_event_name": "PreCompact", "trigger": trigger}
            yield {**base, "hook_event_name": "SessionStart", "source": "compact"}
            continue
        yield from tool_events([record], None)
        if record.get("type") == "progress" and record.get("toolUseID") in uses:
            block = uses[record["toolUseID"]]
            event = data.get("hookEvent")
            if block["name"] in ("Task", "Agent") and event == "PostToolUse":
                # The subagent's calls under its own id, then its SubagentStop.
                yield from tool_events(agent_rows, agent_id)
                yield {
                    **base,
                    "hook_event_name": "SubagentStop",
                    "agent_id": agent_id,
                    "agent_type": agent_type,
                    "stop_hook_active": False,
                }
    yield {**base, "hook_event_name": "SessionEnd", "reason": "other"}


async def live(main: Path, agent: Path, agent_type: str) -> TurnProbe:
    probe = TurnProbe()
    async with (
        Host(plugins=[probe.module()], entry_points=False, store="memory://", env={}) as host,
        anyio.create_task_group() as group,
    ):
        bridge = ClaudeBridge(host, group, suspend_timeout=30)
        try:
            for payload in payloads(main, agent, agent_type):
                answer = await bridge.answer(json.dumps(payload).encode())
                assert answer.exit_code == 0, (payload["hook_event_name"], answer.stderr)
        finally:
            bridge.cancel_all()
    return probe


async def replayed(main: Path, agent: Path) -> TurnProbe:
    probe = TurnProbe()
    report = await replay_paths([main, agent], plugins=[probe.module()], entry_points=False)
    assert len(report.sessions) == 1 and not report.failures
    return probe


@pytest.mark.anyio
async def test_a_session_gets_the_same_turn_ids_live_and_replayed() -> None:
    # A session with six prompts, a background subagent, an automatic compaction and its Stops
    # recorded as hook_progress records.
    main, agent = corpus_file("14_"), corpus_file("15_")
    seen_live = await live(main, agent, "Bash")
    seen_replay = await replayed(main, agent)
    session = next(r["sessionId"] for r in records(main) if r.get("sessionId"))
    assert len(seen_live.main_turns()) >= 5
    assert seen_replay.main_turns() == seen_live.main_turns()
    assert seen_replay.main_turns() == [
        main_turn_id(session, n) for n in range(1, len(seen_live.main_turns()) + 1)
    ]
    assert (
        seen_replay.agent_turns() == seen_live.agent_turns() == {agent_turn_id(session, "aae161c")}
    )
    # Every main-loop call falls in the same turn on both sides.
    assert len(seen_live.calls) >= 80
    assert seen_replay.calls == seen_live.calls


@pytest.mark.anyio
async def test_an_automatic_compaction_keeps_its_turn_on_both_sides() -> None:
    main, agent = corpus_file("14_"), corpus_file("15_")
    rows = records(main)
    boundary = next(i for i, r in enumerate(rows) if r.get("subtype") == "compact_boundary")
    assert rows[boundary]["compactMetadata"]["trigger"] == "auto"
    assert not compaction_ends_turn("auto") and compaction_ends_turn("manual")
    before = {b["id"] for r in rows[:boundary] for b in _uses(r)}
    after = {b["id"] for r in rows[boundary:] for b in _uses(r)}
    seen_replay = await replayed(main, agent)
    last_before = max((seen_replay.calls[i] or "" for i in before), key=_turn_number)
    first_after = min((seen_replay.calls[i] or "" for i in after), key=_turn_number)
    assert last_before == first_after, "the compaction ran inside one turn"


def _uses(record: dict[str, Any]) -> list[dict[str, Any]]:
    content = record.get("message", {}).get("content") if record.get("message") else None
    return [b for b in content if b.get("type") == "tool_use"] if isinstance(content, list) else []


def _turn_number(turn_id: str) -> int:
    return int(turn_id.rsplit(":", 1)[1]) if turn_id else 0


@pytest.mark.anyio
async def test_a_prompt_after_an_interrupted_turn_ends_it_as_cancelled_live() -> None:
    probe = TurnProbe()
    base = {"session_id": "s-int", "cwd": "/w"}
    async with (
        Host(plugins=[probe.module()], entry_points=False, store="memory://", env={}) as host,
        anyio.create_task_group() as group,
    ):
        bridge = ClaudeBridge(host, group, suspend_timeout=30)
        for payload in (
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": "first"},
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": "second"},
            {**base, "hook_event_name": "Stop", "stop_hook_active": False},
        ):
            await bridge.answer(json.dumps(payload).encode())
        bridge.cancel_all()
    assert probe.turns == [
        ("turn.start", None, "s-int:1"),
        ("turn.complete", None, "s-int:1"),
        ("turn.start", None, "s-int:2"),
        ("turn.complete", None, "s-int:2"),
    ]
    assert probe.reasons == ["cancelled", "end_turn"]
