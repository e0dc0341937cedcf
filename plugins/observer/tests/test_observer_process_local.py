"""A host on a process-local store (`memory://`) keeps the session in memory and loses nothing."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from framework import (
    Event,
    FakeClock,
    Host,
    PromptSubmit,
    SessionStart,
    StoreBackend,
    ToolCall,
    TurnComplete,
    open_backend,
)

import observer
from observer import _runtime

START_MS = 1_767_225_600_000
STORES = ["memory", "sqlite"]
TAG = "<!-- routing: provenance=user_directed_method node=discovery-interview counterfactual=x -->"


def _store_url(kind: str, folder: Path) -> str:
    """The store the host opens itself: only then is a `memory://` one process-local."""
    if kind == "memory":
        return "memory://"
    return f"sqlite:///{folder / 'store.db'}"


@asynccontextmanager
async def _host(kind: str, folder: Path, store: StoreBackend | None = None) -> AsyncIterator[Host]:
    """A host on the `kind` store it opens itself, or on `store` when one is handed in."""
    options = {"observer": {"data_dir": str(folder / "log"), "methods": ["discovery-interview"]}}
    async with Host(
        plugins=[observer],
        entry_points=False,
        store=store if store is not None else _store_url(kind, folder),
        clock=FakeClock(start_ms=START_MS),
        options=options,
        config={},
    ) as host:
        yield host


def _episodes(folder: Path) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted((folder / "log").glob("episodes-*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line.pop("id")  # drawn at random
    return lines


def _tool(session: str, index: int, tool: str = "Edit") -> ToolCall:
    return ToolCall(
        session_id=session,
        tool_use_id=f"{session}-{index}",
        tool=tool,
        input={"file_path": f"/{index}"},
    )


# Two sessions whose turns interleave: with one session held in memory, each event of the other
# drops it mid-turn, between turns, and before a compacting `session.start`.
_INTERLEAVED: list[Event] = [
    SessionStart(session_id="s1", model="model-x"),
    PromptSubmit(session_id="s1", text="wrong again, run discovery-interview for ABC-7"),
    _tool("s1", 1),
    SessionStart(session_id="s2", model="model-y"),
    PromptSubmit(session_id="s2", text="hello"),
    _tool("s2", 1, "Read"),
    _tool("s1", 2),
    TurnComplete(session_id="s1", turn_id="a1", last_message="no tag"),
    _tool("s2", 2),
    _tool("s1", 3),
    TurnComplete(session_id="s1", turn_id="a1", last_message=f"done {TAG}"),
    TurnComplete(session_id="s2", turn_id="b1", last_message="ok"),
    SessionStart(session_id="s1", source="compact"),
    PromptSubmit(session_id="s2", text="again"),
    PromptSubmit(session_id="s1", text="on"),
    TurnComplete(session_id="s2", turn_id="b2", last_message="ok"),
    _tool("s1", 4),
    TurnComplete(session_id="s1", turn_id="a2", last_message="ok"),
]


async def _run(kind: str, folder: Path, events: Sequence[Event]) -> list[dict[str, Any]]:
    async with _host(kind, folder) as host:
        for event in events:
            await host.dispatch(event)
    return _episodes(folder)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", STORES)
async def test_a_host_that_drops_sessions_writes_the_same_episodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    # On a shared store too: a session leaving memory mid-turn has its calls counted since the
    # last write stored, so a later event of it (loaded again) loses none of them.
    kept = await _run(kind, tmp_path / "kept", _INTERLEAVED)
    monkeypatch.setattr(_runtime, "MAX_HOT_SESSIONS", 1)
    dropped = await _run(kind, tmp_path / "dropped", _INTERLEAVED)
    assert dropped == kept
    # The run covers what a dropped session must keep: tool counts, the prompt's facts, the
    # gate's question, the turn count and compaction.
    assert [(e["session_id"], e["task_size"]["tool_calls"]) for e in kept] == [
        ("s1", 3),
        ("s2", 2),
        ("s2", 0),
        ("s1", 1),
    ]
    first = kept[0]
    assert first["task_ref"] == "ABC-7"
    assert first["decision_provenance"]["source"] == "routing_tag"
    assert [e["environment"]["session_turn"] for e in kept] == [1, 1, 2, 2]
    assert [e["environment"]["post_compaction"] for e in kept] == [False, False, False, True]
    assert [e["environment"]["model"] for e in kept] == ["model-x", "model-y", "model-y", "model-x"]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", STORES)
async def test_both_stores_give_the_same_episodes(tmp_path: Path, kind: str) -> None:
    reference = await _run("memory", tmp_path / "reference", _INTERLEAVED)
    assert await _run(kind, tmp_path / kind, _INTERLEAVED) == reference


@pytest.mark.anyio
@pytest.mark.parametrize("kind", STORES)
async def test_only_a_shared_store_gets_the_warm_hosts_copies(tmp_path: Path, kind: str) -> None:
    async with _host(kind, tmp_path) as host:
        state = host.engine("observer", "s1").state
        await host.dispatch(SessionStart(session_id="s1", model="model-x"))
        await host.dispatch(PromptSubmit(session_id="s1", text="wrong"))
        await host.dispatch(_tool("s1", 1))
        await host.dispatch(_tool("s1", 2))
        stored_turn = await state.get("turn")
        for turn in ("t1", "t2"):
            await host.dispatch(TurnComplete(session_id="s1", turn_id=turn, last_message="ok"))
        stored_session = await state.get("session")
        live_marks = await host.engine("observer", "s1").store.keys("live:")
    assert live_marks == ([] if kind == "memory" else ["live:s1"])
    if kind == "memory":
        # Nobody but this host could read them: the prompt's facts, the session's facts and the
        # live marks stay in memory.
        assert stored_turn is None
        assert stored_session is None
    else:
        assert stored_turn is not None
        assert stored_turn["prompt"]["correction_cues"] == ["wrong"]
        assert stored_session == {"turns": 2, "model": "model-x", "post_compaction": False}


@pytest.mark.anyio
@pytest.mark.parametrize("kind", STORES)
async def test_parallel_sessions_follow_the_window_and_the_marks_lifetime(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wall = [1_000_000.0]
    monkeypatch.setattr(time, "time", lambda: wall[0])
    clock = FakeClock(start_ms=START_MS)
    options = {"observer": {"data_dir": str(tmp_path / "log"), "parallel_window_minutes": 30}}
    flags: list[bool] = []
    async with Host(
        plugins=[observer],
        entry_points=False,
        store=_store_url(kind, tmp_path),
        clock=clock,
        options=options,
        config={},
    ) as host:
        # (session, engine clock step, wall step): a mark counts within the window of the
        # session's clock and while its key lives (its TTL runs in wall time).
        for session, step_ms, step_s in (
            ("s1", 0, 0.0),
            ("s2", 60_000, 0.0),  # s1 a minute ago
            ("s1", 31 * 60_000, 0.0),  # s2 31 minutes ago: outside the window
            ("s2", 29 * 60_000, 0.0),  # s1 29 minutes ago
            ("s1", 0, 30 * 60.0 + 1),  # s2 now by the clock, but its key has expired
            ("s3", 0, 0.0),  # s1 just marked
        ):
            clock.advance(step_ms)
            wall[0] += step_s
            await host.dispatch(PromptSubmit(session_id=session, text="go"))
            await host.dispatch(TurnComplete(session_id=session, turn_id="t", last_message="ok"))
    flags = [e["environment"]["parallel_session"] for e in _episodes(tmp_path)]
    assert flags == [False, True, False, True, False, True]


@pytest.mark.anyio
async def test_a_memory_backend_handed_to_two_hosts_in_turn_counts_turns_on(
    tmp_path: Path,
) -> None:
    # A backend object may outlive the host it was handed to: the session's facts are written.
    backend = open_backend("memory://")
    try:
        for turn in ("t1", "t2"):
            async with _host("memory", tmp_path, store=backend) as host:
                assert not host.store.process_local
                if turn == "t1":
                    await host.dispatch(SessionStart(session_id="s1"))
                await host.dispatch(TurnComplete(session_id="s1", turn_id=turn, last_message="ok"))
    finally:
        await backend.aclose()
    assert [line["environment"]["session_turn"] for line in _episodes(tmp_path)] == [1, 2]


@pytest.mark.anyio
async def test_an_unreadable_stored_turn_starts_over_and_the_turn_still_gets_its_episode(
    tmp_path: Path,
) -> None:
    async with _host("sqlite", tmp_path) as host:
        state = host.engine("observer", "s1").state
        await state.set("turn", {"tool_calls": "many", "prompt": []})
        await host.dispatch(_tool("s1", 1))
        await host.dispatch(_tool("s1", 2))
        await host.dispatch(TurnComplete(session_id="s1", turn_id="t1", last_message="ok"))
    episodes = _episodes(tmp_path)
    assert [e["task_size"]["tool_calls"] for e in episodes] == [2]


@pytest.mark.anyio
async def test_the_same_prompt_after_a_turn_end_is_stored_again(tmp_path: Path) -> None:
    # The turn end deletes the stored turn: an equal prompt afterwards must not be taken for
    # one already stored.
    async with _host("sqlite", tmp_path) as host:
        state = host.engine("observer", "s1").state
        await host.dispatch(SessionStart(session_id="s1"))
        for turn in ("t1", "t2"):
            await host.dispatch(PromptSubmit(session_id="s1", text="wrong again"))
            assert (await state.get("turn"))["prompt"]["correction_cues"] == ["wrong"]
            await host.dispatch(TurnComplete(session_id="s1", turn_id=turn, last_message="ok"))
            assert await state.get("turn") is None
