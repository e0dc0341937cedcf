"""The replay runner and `hookchain replay` with small plugins written for these tests."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from framework import (
    CallNext,
    Engine,
    PluginInfo,
    StreamChunk,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    TurnStep,
    hookimpl,
    tap,
)
from framework.cli.app import app
from framework.replay.cli import register_cli
from framework.replay.runner import ReplayReport, one_line, replay_paths, tool_label

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "transcripts"
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def probe_plugin(seen: list[tuple[str, Any]]) -> types.ModuleType:
    """A plugin that records what it sees and acts on failures, stops and streams."""
    module = types.ModuleType("replay_probe")

    async def on_tool(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        seen.append(("tool", (event.tool_use_id, event.agent_id, await engine.clock.now())))
        result: ToolResult = await call_next(event)
        seen.append(("result", (event.tool_use_id, result.is_error, result.output)))
        if result.is_error and result.denial is None:
            return result.with_note("that failed", by="replay-probe")
        return result

    async def on_complete(engine: Engine, event: TurnComplete, call_next: CallNext) -> TurnResult:
        result: TurnResult = await call_next(event)
        seen.append(("complete", (event.stop_hook_active, result.continuation)))
        return result

    async def on_step(engine: Engine, event: TurnStep, call_next: CallNext) -> Any:
        stream = await call_next(event)

        def on_chunk(chunk: StreamChunk) -> None:
            if chunk.kind == "stop" and chunk.stop_reason == "refusal":
                engine.ui.toast("refused")
                engine.transcript.line("the model refused")

        return tap(stream, on_chunk=on_chunk)

    @hookimpl
    def register(on: Any, options: Any) -> None:
        on("tool.call", on_tool)
        on("turn.complete", on_complete)
        on("turn.step", on_step)

    module.plugin = PluginInfo(name="replay-probe", contract=">=1,<2")  # type: ignore[attr-defined]
    module.register = register  # type: ignore[attr-defined]
    return module


def write_session(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def record(kind: str, second: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "sessionId": "s-1",
        "uuid": f"u{second}",
        "parentUuid": f"u{second - 1}" if second else None,
        "timestamp": f"2026-01-01T10:00:{second:02d}.000Z",
        "cwd": "/work/p",
        **fields,
    }


def assistant(second: int, message_id: str, block: dict[str, Any], stop: str | None = None) -> Any:
    message = {"id": message_id, "content": [block], "stop_reason": stop}
    return record("assistant", second, message=message)


def result(second: int, tool_use_id: str, content: str, is_error: bool = False) -> Any:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    return record("user", second, message={"content": [{**block, "is_error": is_error}]})


def small_session(tmp_path: Path) -> Path:
    return write_session(
        tmp_path / "s.jsonl",
        [
            record("user", 0, message={"content": "run the tests"}),
            assistant(
                1,
                "m1",
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}},
            ),
            result(2, "t1", "Exit code 2", is_error=True),
            assistant(3, "m2", {"type": "text", "text": "done"}),
            record(
                "user", 4, message={"content": "Stop hook feedback:\n[check]: not yet"}, isMeta=True
            ),
            assistant(5, "m3", {"type": "text", "text": "no"}, stop="refusal"),
        ],
    )


async def replay_with_probe(paths: list[Path], seen: list[tuple[str, Any]]) -> ReplayReport:
    return await replay_paths(paths, plugins=[probe_plugin(seen)], entry_points=False)


@pytest.mark.anyio
async def test_terminals_return_what_was_recorded_at_the_recorded_time(tmp_path: Path) -> None:
    seen: list[tuple[str, Any]] = []
    await replay_with_probe([small_session(tmp_path)], seen)
    tools = [value for kind, value in seen if kind == "tool"]
    results = [value for kind, value in seen if kind == "result"]
    assert tools == [("t1", None, 1767261601000)]
    assert results == [("t1", True, "Exit code 2")]


@pytest.mark.anyio
async def test_recorded_stop_block_reaches_the_chain_and_marks_the_next_stop(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str, Any]] = []
    await replay_with_probe([small_session(tmp_path)], seen)
    completes = [value for kind, value in seen if kind == "complete"]
    assert [active for active, _ in completes] == [False, True]
    first = completes[0][1]
    assert first is not None
    assert first.reason == "[check]: not yet"
    assert completes[1][1] is None


@pytest.mark.anyio
async def test_report_holds_dispatch_actions_and_stream_actions_in_place(tmp_path: Path) -> None:
    report = await replay_with_probe([small_session(tmp_path)], [])
    shown = [(a.by, a.kind, a.event, a.tool_use_id, a.index) for a in report.actions]
    assert shown == [
        ("replay-probe", "note", "tool.call", "t1", 4),
        ("replay-probe", "toast", "turn.step", None, 7),
        ("replay-probe", "transcript", "turn.step", None, 7),
    ]
    assert report.actions[0].label == "make test"
    data = report.to_json()
    assert set(data) == {"sessions", "actions", "summary"}
    assert set(data["actions"][0]) == {
        "session_id",
        "by",
        "event",
        "kind",
        "tool_use_id",
        "index",
        "text",
    }
    summary = data["summary"]
    assert summary["plugins"] == {"replay-probe": {"note": 1, "toast": 1, "transcript": 1}}
    assert (summary["sessions"], summary["tool_calls"], summary["tool_calls_main"]) == (1, 1, 1)


@pytest.mark.anyio
async def test_subagent_calls_run_inside_the_task_call() -> None:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}")
    seen: list[tuple[str, Any]] = []
    paths = sorted(CORPUS.glob("12_*.jsonl")) + sorted(CORPUS.glob("13_*.jsonl"))
    report = await replay_with_probe(paths, seen)
    order = [(kind, value[0]) for kind, value in seen if kind in ("tool", "result")]
    task, search = order[0][1], order[1][1]
    assert order == [("tool", task), ("tool", search), ("result", search), ("result", task)]
    assert [value[1] for kind, value in seen if kind == "tool"] == [None, "a2018e5"]
    assert (report.summary()["tool_calls"], report.summary()["tool_calls_main"]) == (2, 1)


@pytest.mark.anyio
async def test_since_keeps_only_recent_sessions(tmp_path: Path) -> None:
    path = small_session(tmp_path)
    later = await replay_paths([path], entry_points=False, since_ms=1767261600000)
    none = await replay_paths([path], entry_points=False, since_ms=1767300000000)
    assert len(later.sessions) == 1
    assert none.sessions == ()


def test_labels_pick_the_telling_field() -> None:
    assert tool_label("Bash", {"command": "npm   test\n--watch", "description": "x"}) == (
        "npm test --watch"
    )
    assert tool_label("Edit", {"file_path": "/a/b.py", "old_string": "x"}) == "/a/b.py"
    assert tool_label("Task", {"description": "Explore", "prompt": "p"}) == "Explore"
    assert len(tool_label("Bash", {"command": "x" * 500})) == 60
    assert tool_label("Bash", {"command": "x" * 500}) == "x" * 59 + "…"


def test_one_line_flattens_and_cuts_only_past_the_width() -> None:
    assert one_line(" a\n\tb  c ", 10) == "a b c"
    assert one_line("abcde", 5) == "abcde"
    assert one_line("abcdef", 5) == "abcd…"


def cli() -> CliRunner:
    if not any(c.name == "replay" for c in app.registered_commands):
        register_cli(app)
    return CliRunner()


def test_cli_refuses_a_missing_path_with_exit_2(tmp_path: Path) -> None:
    outcome = cli().invoke(app, ["replay", str(tmp_path / "missing")])
    assert outcome.exit_code == 2
    assert "missing" in outcome.output


def test_cli_json_on_the_examples_names_every_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKCHAIN_PLUGINS", "none-such-plugin")
    outcome = cli().invoke(app, ["replay", "--json", str(EXAMPLES)])
    assert outcome.exit_code == 0, outcome.output
    data = json.loads(outcome.stdout)
    assert data["summary"]["sessions"] == 3
    assert data["summary"]["tool_calls"] == 14
    assert data["actions"] == []


def test_the_recorded_home_is_read_from_the_recorded_cwd() -> None:
    from framework.replay.runner import recorded_home

    assert recorded_home("/Users/pete/git/app") == "/Users/pete"
    assert recorded_home("/home/jim") == "/home/jim"
    assert recorded_home("/root/work") == "/root"
    assert recorded_home("/mnt/c/python/cctrace") is None
    assert recorded_home("/Userspace/x") is None
    assert recorded_home("") is None


@pytest.mark.anyio
async def test_tilde_in_a_replayed_call_is_the_recorded_users_home(tmp_path: Path) -> None:
    seen: list[tuple[str | None, str]] = []

    async def on_tool(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        seen.append((engine.env.get("HOME"), engine.session.cwd))
        result: ToolResult = await call_next(event)
        return result

    module = types.ModuleType("home_probe")
    module.plugin = PluginInfo(name="home-probe", contract=">=1,<2")  # type: ignore[attr-defined]

    @hookimpl
    def register_probe(on: Any, options: Any) -> None:
        on("tool.call", on_tool)

    module.register = register_probe  # type: ignore[attr-defined]
    base = {"sessionId": "s-home", "cwd": "/Users/pat/app", "version": "2.1.0"}
    records = [
        {**base, "type": "user", "uuid": "u1", "timestamp": "2026-03-01T10:00:00Z",
         "message": {"role": "user", "content": "plan it"}},
        {**base, "type": "assistant", "uuid": "a1", "timestamp": "2026-03-01T10:00:01Z",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "Write",
              "input": {"file_path": "~/.claude/plans/p.md", "content": "x"}}]}},
        {**base, "type": "user", "uuid": "u2", "timestamp": "2026-03-01T10:00:02Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}},
    ]  # fmt: skip
    path = tmp_path / "s-home.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    await replay_paths([path], plugins=[module], entry_points=False)
    assert seen == [("/Users/pat", "/Users/pat/app")]
