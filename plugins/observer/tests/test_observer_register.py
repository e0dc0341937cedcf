"""The observer inside a real host: episodes per main turn, the routing gate, markers, the toast."""

from __future__ import annotations

import json
import os
import subprocess
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from framework import (
    CallNext,
    Engine,
    FakeClock,
    Host,
    PluginInfo,
    PromptResult,
    PromptSubmit,
    SessionStart,
    StoreBackend,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    hookimpl,
    open_backend,
)
from observer._read_counter import WEEK_MS, ReadCounter, save_counter

import observer

START_MS = 1_767_225_600_000
DAY_MS = WEEK_MS // 7
TAG = (
    "<!-- routing: provenance=user_directed_method node=discovery-interview counterfactual=plan -->"
)


def _lines(data_dir: Path) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted(data_dir.glob("episodes-*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "log"


@pytest.fixture
async def host(tmp_path: Path, data_dir: Path) -> AsyncIterator[Host]:
    options = {"observer": {"data_dir": str(data_dir), "methods": ["discovery-interview"]}}
    async with Host(
        plugins=[observer],
        entry_points=False,
        store="memory://",
        clock=FakeClock(start_ms=START_MS),
        env={"ECONOMY": "high"},
        options=options,
        config={},
    ) as running:
        yield running


async def _turn(
    host: Host, prompt: str, *, session: str = "s1", turn: str = "t1", last: str = "done"
) -> TurnResult:
    await host.dispatch(PromptSubmit(session_id=session, text=prompt))
    result: TurnResult = (
        await host.dispatch(TurnComplete(session_id=session, turn_id=turn, last_message=last))
    ).result
    return result


@pytest.mark.anyio
async def test_a_main_turn_writes_one_scrubbed_episode(host: Host, data_dir: Path) -> None:
    await host.dispatch(SessionStart(session_id="s1", cwd="/w", model="model-x"))
    prompt = "fix ABC-7, wrong again; mail jane@example.com key AKIAIOSFODNN7EXAMPLE"
    await host.dispatch(PromptSubmit(session_id="s1", text=prompt))
    for index, (tool, tool_input) in enumerate(
        [
            ("Read", {"file_path": "/w/a.py"}),
            ("Edit", {"file_path": "/w/a.py", "old_string": "jane@example.com"}),
            ("Bash", {"command": "pytest"}),
        ]
    ):
        await host.dispatch(
            ToolCall(session_id="s1", tool_use_id=f"u{index}", tool=tool, input=tool_input)
        )
    await host.dispatch(TurnComplete(session_id="s1", turn_id="sub", agent_id="a1"))
    outcome = await host.dispatch(TurnComplete(session_id="s1", turn_id="t1", last_message="ok"))
    assert outcome.result == TurnResult()
    [episode] = _lines(data_dir)
    assert episode["record"] == "episode"
    assert episode["schema_version"] == 3
    assert (episode["session_id"], episode["turn_id"], episode["node"]) == ("s1", "t1", "none")
    assert episode["task_size"] == {
        "tool_calls": 3,
        "edits": 1,
        "files_touched": 1,
        "bucket": "small",
    }
    assert episode["task_ref"] == "ABC-7"
    assert episode["prompt_signal"]["correction_cues"] == ["wrong"]
    assert episode["environment"]["model"] == "model-x"
    assert episode["environment"]["session_turn"] == 1
    assert episode["decision_provenance"]["provenance"] == "autonomous"
    assert episode["outcome"] == "unknown"
    raw = json.dumps(_lines(data_dir))
    assert "jane@example.com" not in raw and "AKIAIOSFODNN7EXAMPLE" not in raw
    assert "/w/a.py" not in raw and "pytest" not in raw


@pytest.mark.anyio
async def test_gate_asks_once_when_the_tag_is_missing(host: Host, data_dir: Path) -> None:
    first = await _turn(host, "please run discovery-interview")
    assert first.continuation is not None
    assert first.continuation.by == "observer"
    assert "node=discovery-interview" in first.continuation.reason
    assert _lines(data_dir) == []
    # The same turn stops again without the tag: the gate does not ask a second time.
    second = await host.dispatch(TurnComplete(session_id="s1", turn_id="t1", last_message="done"))
    assert second.result.continuation is None
    [episode] = _lines(data_dir)
    assert episode["decision_provenance"] == {
        "provenance": "user_directed_method",
        "counterfactual": None,
        "source": "prompt",
    }
    assert episode["node"] == "discovery-interview"


@pytest.mark.anyio
async def test_gate_respects_stop_hook_active(host: Host, data_dir: Path) -> None:
    await host.dispatch(PromptSubmit(session_id="s1", text="run discovery-interview"))
    event = TurnComplete(session_id="s1", turn_id="t1", stop_hook_active=True, last_message="x")
    assert (await host.dispatch(event)).result.continuation is None
    assert len(_lines(data_dir)) == 1


@pytest.mark.anyio
async def test_gate_passes_a_tagged_message_and_uses_the_tag(host: Host, data_dir: Path) -> None:
    result = await _turn(host, "run discovery-interview", last=f"done\n{TAG}")
    assert result.continuation is None
    [episode] = _lines(data_dir)
    assert episode["decision_provenance"] == {
        "provenance": "user_directed_method",
        "counterfactual": "plan",
        "source": "routing_tag",
    }


@pytest.mark.anyio
async def test_gate_is_silent_without_a_dictated_method(host: Host, data_dir: Path) -> None:
    assert (await _turn(host, "just fix the test")).continuation is None
    assert len(_lines(data_dir)) == 1


@pytest.mark.anyio
async def test_a_continuation_from_elsewhere_postpones_the_episode(
    host: Host, data_dir: Path
) -> None:
    async def keep_going(event: TurnComplete) -> TurnResult:
        return TurnResult().continued("more", by="someone")

    await host.dispatch(PromptSubmit(session_id="s1", text="hello"))
    outcome = await host.dispatch(TurnComplete(session_id="s1", turn_id="t1"), terminal=keep_going)
    assert outcome.result.continuation is not None
    assert outcome.result.continuation.by == "someone"
    assert _lines(data_dir) == []


@pytest.mark.anyio
async def test_turns_are_numbered_and_compaction_is_remembered(host: Host, data_dir: Path) -> None:
    await _turn(host, "one", turn="t1")
    await host.dispatch(SessionStart(session_id="s1", source="compact"))
    await _turn(host, "two", turn="t2")
    episodes = _lines(data_dir)
    assert [e["environment"]["session_turn"] for e in episodes] == [1, 2]
    assert [e["environment"]["post_compaction"] for e in episodes] == [False, True]


@pytest.mark.anyio
async def test_parallel_sessions_are_flagged(host: Host, data_dir: Path) -> None:
    await _turn(host, "alone", session="s1")
    await _turn(host, "together", session="s2")
    assert [e["environment"]["parallel_session"] for e in _lines(data_dir)] == [False, True]


@pytest.mark.anyio
async def test_an_internal_failure_writes_a_marker_and_leaves_the_prompt(data_dir: Path) -> None:
    options = {"observer": {"data_dir": str(data_dir), "task_ref_pattern": "(unclosed"}}
    async with Host(
        plugins=[observer], entry_points=False, store="memory://", options=options, config={}
    ) as host:
        outcome = await host.dispatch(PromptSubmit(session_id="s1", text="hello"))
        assert outcome.result == PromptResult(text="hello")
    [marker] = _lines(data_dir)
    assert marker["record"] == "observer_error"
    assert marker["stage"] == "prompt.submit"
    assert marker["error_type"] in {"error", "PatternError"}  # re.error was renamed in 3.13
    assert "hello" not in json.dumps(marker)


@pytest.mark.anyio
async def test_an_unwritable_log_never_affects_the_turn(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    options = {"observer": {"data_dir": str(blocked / "log")}}
    async with Host(
        plugins=[observer], entry_points=False, store="memory://", options=options, config={}
    ) as host:
        await host.dispatch(PromptSubmit(session_id="s1", text="hi"))
        outcome = await host.dispatch(TurnComplete(session_id="s1", turn_id="t1"))
        assert outcome.result == TurnResult()


@pytest.mark.anyio
async def test_session_start_toasts_when_the_log_went_unread(host: Host, data_dir: Path) -> None:
    save_counter(data_dir, ReadCounter(first_seen_ms=START_MS - 54 * WEEK_MS))
    outcome = await host.dispatch(SessionStart(session_id="s1"))
    toasts = [action for action in outcome.actions if action.kind == "toast"]
    assert len(toasts) == 1
    assert toasts[0].by == "observer"
    assert "54 weeks" in toasts[0].text
    # Reminded once; the next session start the same day stays quiet.
    again = await host.dispatch(SessionStart(session_id="s2"))
    assert not [action for action in again.actions if action.kind == "toast"]


@pytest.mark.anyio
async def test_session_start_on_a_fresh_workspace_starts_the_counter(
    host: Host, data_dir: Path
) -> None:
    outcome = await host.dispatch(SessionStart(session_id="s1"))
    assert not [action for action in outcome.actions if action.kind == "toast"]
    counter = json.loads((data_dir / ".read-counter.json").read_text())
    assert counter["first_seen_ms"] == START_MS
    assert counter["reads"] == 0


@pytest.mark.anyio
async def test_the_plugin_loads_with_its_declared_name(host: Host) -> None:
    [loaded] = host.plugins
    assert (loaded.name, loaded.status) == ("observer", "loaded")


def _count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting(descriptor: int) -> None:
        synced.append(descriptor)
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", counting)
    return synced


@pytest.mark.anyio
async def test_a_real_host_fsyncs_every_episode(
    host: Host, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await host.dispatch(SessionStart(session_id="s1", cwd="/w"))
    synced = _count_fsyncs(monkeypatch)
    await _turn(host, "one", turn="t1")
    await _turn(host, "two", turn="t2")
    assert len(_lines(data_dir)) == 2
    assert len(synced) == 2


@pytest.mark.anyio
async def test_a_sandboxed_host_writes_the_same_episodes_without_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = tmp_path / "sandbox"
    async with Host(
        plugins=[observer],
        entry_points=False,
        store="memory://",
        clock=FakeClock(start_ms=START_MS),
        options={"observer": {"data_dir": str(tmp_path / "configured")}},
        config={},
        sandbox=sandbox,
    ) as sandboxed:
        await sandboxed.dispatch(SessionStart(session_id="s1", cwd="/w"))
        synced = _count_fsyncs(monkeypatch)
        await _turn(sandboxed, "one", turn="t1")
        await _turn(sandboxed, "two", turn="t2")
    assert [line["turn_id"] for line in _lines(sandbox / "observer")] == ["t1", "t2"]
    assert synced == []
    assert not (tmp_path / "configured").exists()


def _shared_backend(data_dir: Path) -> StoreBackend:
    """A store that hosts share, as successive hook processes share the default SQLite file (a
    `memory://` store is process-local: a host may keep in memory what only it will read)."""
    return open_backend(f"sqlite:///{data_dir.parent / 'store.db'}")


def _fresh_host(backend: StoreBackend, data_dir: Path) -> Host:
    options = {"observer": {"data_dir": str(data_dir), "methods": ["discovery-interview"]}}
    return Host(
        plugins=[observer],
        entry_points=False,
        store=backend,
        clock=FakeClock(start_ms=START_MS),
        options=options,
        config={},
    )


_TURN_EVENTS: list[Any] = [
    PromptSubmit(session_id="s1", text="please run discovery-interview"),
    *(
        ToolCall(session_id="s1", tool_use_id=f"u{i}", tool="Edit", input={"file_path": f"/w/{i}"})
        for i in range(3)
    ),
    TurnComplete(session_id="s1", turn_id="t1", last_message=f"done\n{TAG}"),
]


@pytest.mark.anyio
async def test_a_host_per_hook_call_loses_no_tool_call(data_dir: Path) -> None:
    backend = _shared_backend(data_dir)
    for event in _TURN_EVENTS:
        async with _fresh_host(backend, data_dir) as host:
            await host.dispatch(event)
    [episode] = _lines(data_dir)
    assert episode["task_size"]["tool_calls"] == 3
    assert episode["task_size"]["files_touched"] == 3
    assert episode["node"] == "discovery-interview"
    await backend.aclose()


@pytest.mark.anyio
async def test_a_warm_host_counts_in_memory_and_a_restarted_one_keeps_the_prompt(
    data_dir: Path,
) -> None:
    backend = _shared_backend(data_dir)
    async with _fresh_host(backend, data_dir) as warm:
        await warm.dispatch(PromptSubmit(session_id="s1", text="wrong again, fix it"))
        for event in _TURN_EVENTS[1:-1]:
            await warm.dispatch(event)
    async with _fresh_host(backend, data_dir) as restarted:
        await restarted.dispatch(TurnComplete(session_id="s1", turn_id="t1", last_message="ok"))
    [episode] = _lines(data_dir)
    # The prompt's facts were stored when it came; the warm host's counts went with it.
    assert episode["prompt_signal"]["correction_cues"] == ["wrong"]
    assert episode["task_size"]["tool_calls"] == 0
    await backend.aclose()


@pytest.mark.anyio
async def test_a_warm_host_starts_each_turn_from_zero(host: Host, data_dir: Path) -> None:
    for turn in ("t1", "t2"):
        await host.dispatch(PromptSubmit(session_id="s1", text="go"))
        await host.dispatch(ToolCall(session_id="s1", tool_use_id=turn, tool="Read", input={}))
        await host.dispatch(TurnComplete(session_id="s1", turn_id=turn, last_message="ok"))
    assert [line["task_size"]["tool_calls"] for line in _lines(data_dir)] == [1, 1]


@pytest.mark.anyio
async def test_only_a_persons_prompt_starts_the_turns_facts(host: Host, data_dir: Path) -> None:
    await host.dispatch(PromptSubmit(session_id="s1", text="fix ABC-7, wrong again"))
    notice = "background job finished: wrong exit status for ABC-9, run discovery-interview"
    await host.dispatch(PromptSubmit(session_id="s1", text=notice, origin_kind="notification"))
    outcome = await host.dispatch(TurnComplete(session_id="s1", turn_id="t1", last_message="ok"))
    assert outcome.result.continuation is None  # the notification dictated no method
    [episode] = _lines(data_dir)
    assert episode["task_ref"] == "ABC-7"
    assert episode["prompt_signal"]["length_bucket"] == "short"
    assert episode["decision_provenance"]["source"] == "none"


@pytest.mark.anyio
async def test_a_restarted_host_continues_the_sessions_turn_count(data_dir: Path) -> None:
    backend = _shared_backend(data_dir)
    async with _fresh_host(backend, data_dir) as first:
        await first.dispatch(SessionStart(session_id="s1", model="model-x", source="compact"))
        await _turn(first, "one", turn="t1")
    async with _fresh_host(backend, data_dir) as restarted:
        await _turn(restarted, "two", turn="t2")
    environments = [episode["environment"] for episode in _lines(data_dir)]
    assert [e["session_turn"] for e in environments] == [1, 2]
    assert [e["model"] for e in environments] == ["model-x", "model-x"]
    assert [e["post_compaction"] for e in environments] == [True, True]
    await backend.aclose()


@pytest.mark.anyio
async def test_each_sandboxed_host_writes_into_its_own_sandbox(tmp_path: Path) -> None:
    for name in ("first", "second"):
        async with Host(
            plugins=[observer],
            entry_points=False,
            store="memory://",
            clock=FakeClock(start_ms=START_MS),
            config={},
            sandbox=tmp_path / name,
        ) as sandboxed:
            for session, cwd in (("s1", tmp_path / "w1"), ("s2", tmp_path / "w2")):
                await sandboxed.dispatch(SessionStart(session_id=session, cwd=str(cwd)))
                await _turn(sandboxed, f"{name} {session}", session=session, turn=f"{name}-t")
    for name in ("first", "second"):
        lines = _lines(tmp_path / name / "observer")
        assert [(line["session_id"], line["turn_id"]) for line in lines] == [
            ("s1", f"{name}-t"),
            ("s2", f"{name}-t"),
        ]
    assert not (tmp_path / "w1").exists() and not (tmp_path / "w2").exists()


@pytest.mark.anyio
async def test_a_warm_host_stores_each_turn_count_for_a_restarted_one(data_dir: Path) -> None:
    backend = _shared_backend(data_dir)
    async with _fresh_host(backend, data_dir) as warm:
        await warm.dispatch(SessionStart(session_id="s1", model="model-x"))
        for turn in ("t1", "t2", "t3"):
            await _turn(warm, "go", turn=turn)
        await warm.dispatch(SessionStart(session_id="s1", source="compact"))
    async with _fresh_host(backend, data_dir) as restarted:
        await _turn(restarted, "on", turn="t4")
    environments = [episode["environment"] for episode in _lines(data_dir)]
    assert [e["session_turn"] for e in environments] == [1, 2, 3, 4]
    assert [e["model"] for e in environments] == ["model-x"] * 4
    assert [e["post_compaction"] for e in environments] == [False, False, False, True]
    await backend.aclose()


def _counter_files(root: Path) -> list[Path]:
    return list(root.rglob(".read-counter.json"))


@pytest.mark.anyio
@pytest.mark.parametrize("sandboxed", [False, True], ids=["real", "sandboxed"])
async def test_the_unread_reminder_is_the_same_in_a_sandbox_without_its_file(
    tmp_path: Path, sandboxed: bool
) -> None:
    clock = FakeClock(start_ms=START_MS)
    data_dir = tmp_path / "log"
    async with Host(
        plugins=[observer],
        entry_points=False,
        store="memory://",
        clock=clock,
        options={"observer": {"data_dir": str(data_dir)}},
        config={},
        sandbox=tmp_path / "sandbox" if sandboxed else None,
    ) as running:
        reminded: list[str] = []
        for session, step_ms in (("s1", 0), ("s2", 54 * WEEK_MS), ("s3", 1000), ("s4", DAY_MS)):
            clock.advance(step_ms)
            outcome = await running.dispatch(SessionStart(session_id=session))
            toasts = [action.text for action in outcome.actions if action.kind == "toast"]
            reminded += [session for text in toasts if "not been read for 54 weeks" in text]
    assert reminded == ["s2", "s4"]
    counter_files = _counter_files(tmp_path)
    if sandboxed:
        # The sandbox's folder is thrown away: the counter lived in the host only.
        assert counter_files == []
    else:
        assert counter_files == [data_dir / ".read-counter.json"]
        assert json.loads(counter_files[0].read_text())["last_reminded_ms"] == START_MS + (
            54 * WEEK_MS + 1000 + DAY_MS
        )


@pytest.mark.anyio
async def test_two_hosts_serving_one_session_on_a_shared_store_never_count_a_turn_twice(
    data_dir: Path,
) -> None:
    backend = _shared_backend(data_dir)
    async with _fresh_host(backend, data_dir) as first, _fresh_host(backend, data_dir) as second:
        await first.dispatch(SessionStart(session_id="s1"))
        await first.dispatch(TurnComplete(session_id="s1", turn_id="t1", last_message="ok"))
        await second.dispatch(TurnComplete(session_id="s1", turn_id="t2", last_message="ok"))
        # The first host is warm for the session now; the count is the store's, not its copy.
        await first.dispatch(TurnComplete(session_id="s1", turn_id="t3", last_message="ok"))
    assert [line["environment"]["session_turn"] for line in _lines(data_dir)] == [1, 2, 3]
    await backend.aclose()


def _denying_guard() -> types.ModuleType:
    """A guard in write-guard's place in the chain (order -100) that denies every Write."""
    module = types.ModuleType("denying_guard")

    @hookimpl
    def register(on: Any, options: Any) -> None:
        async def deny(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
            return ToolResult.denied("not here", by="denying-guard")

        on("tool.call", deny, match={"tool": "Write"}, order=-100, fail="closed")

    module.plugin = PluginInfo(name="denying-guard", contract=">=1,<2")  # type: ignore[attr-defined]
    module.register = register  # type: ignore[attr-defined]
    return module


@pytest.mark.anyio
async def test_denied_calls_are_calls_the_model_made(data_dir: Path) -> None:
    """Issue 22: two calls a guard outside the observer's place denied still count."""
    options = {"observer": {"data_dir": str(data_dir)}}
    async with Host(
        plugins=[observer, _denying_guard()],
        entry_points=False,
        store="memory://",
        clock=FakeClock(start_ms=START_MS),
        env={},
        options=options,
        config={},
    ) as host:
        await host.dispatch(SessionStart(session_id="s1", cwd="/w"))
        await host.dispatch(PromptSubmit(session_id="s1", text="write two files"))
        for index, name in enumerate(["a", "b"]):
            call = ToolCall(
                session_id="s1",
                tool_use_id=f"u{index}",
                tool="Write",
                input={"file_path": f"/elsewhere/{name}.txt", "content": "x"},
            )
            outcome = await host.dispatch(call)
            assert outcome.result.denial is not None
        await host.dispatch(TurnComplete(session_id="s1", turn_id="t1", last_message="ok"))
    [episode] = _lines(data_dir)
    assert episode["task_size"]["tool_calls"] == 2
    assert episode["task_size"]["bucket"] == "small"


@pytest.mark.anyio
async def test_each_episode_names_the_harness_its_turn_came_from(
    host: Host, data_dir: Path
) -> None:
    for session, harness in (("s1", "codex"), ("s2", "claude-code")):
        await host.dispatch(SessionStart(session_id=session, cwd="/w", harness=harness))
        await host.dispatch(PromptSubmit(session_id=session, text="hi", harness=harness))
        await host.dispatch(TurnComplete(session_id=session, turn_id="t1", harness=harness))
    episodes = _lines(data_dir)
    assert [(e["session_id"], e["environment"]["harness"]) for e in episodes] == [
        ("s1", "codex"),
        ("s2", "claude-code"),
    ]
    assert {e["schema_version"] for e in episodes} == {3}


@pytest.mark.anyio
async def test_the_created_hookchain_folder_never_shows_in_git_status(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git_env = {
        "HOME": str(tmp_path),
        "PATH": os.environ["PATH"],
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=repo, env=git_env, capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    git("init", "-q")
    async with Host(
        plugins=[observer], entry_points=False, store="memory://", env={}, options={}, config={}
    ) as running:
        await running.dispatch(SessionStart(session_id="s1", cwd=str(repo)))
        await _turn(running, "hello")
    assert list((repo / ".hookchain" / "observer").glob("episodes-*.jsonl"))
    assert (repo / ".hookchain" / ".gitignore").read_text() == "*\n"
    assert git("status", "--porcelain", "--untracked-files=all") == ""
