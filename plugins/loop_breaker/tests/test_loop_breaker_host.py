"""Host-level tests: the plugin wired into a real `Host`, driven through `Host.dispatch`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from framework import (
    CallNext,
    CommandReply,
    CommandRun,
    Engine,
    FakeClock,
    Host,
    PluginInfo,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    StoreBackend,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    hookimpl,
    open_backend,
)
from structlog.testing import capture_logs

import loop_breaker

pytestmark = pytest.mark.anyio

FAIL = "FAIL tests/test_api.py\nAssertionError: expected 200, got 500"


def _host(
    options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    store: StoreBackend | None = None,
) -> Host:
    return Host(
        plugins=[loop_breaker],
        entry_points=False,
        store=store or "memory://",
        clock=FakeClock(start_ms=1_700_000_000_000),
        env=dict(env or {}),
        options={"loop-breaker": dict(options or {})},
    )


class Terminal:
    """The harness's own behaviour: the tool 'runs' and fails or succeeds as scripted."""

    def __init__(self, output: str = FAIL, is_error: bool = True) -> None:
        self.output = output
        self.is_error = is_error
        self.runs = 0

    async def __call__(self, event: ToolCall) -> ToolResult:
        self.runs += 1
        return ToolResult(output=self.output, is_error=self.is_error)


def _call(index: int, command: str = "pytest -q", session: str = "s1") -> ToolCall:
    return ToolCall(
        session_id=session, tool_use_id=f"t{index}", tool="Bash", input={"command": command}
    )


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    async with _host() as started:
        yield started


async def test_third_failure_gets_a_tagged_note_and_the_fifth_alerts_the_person(
    host: Host,
) -> None:
    terminal = Terminal()
    outcomes = [await host.dispatch(_call(i), terminal=terminal) for i in range(5)]
    assert [len(o.result.notes) for o in outcomes] == [0, 0, 1, 0, 0]
    note = outcomes[2].result.notes[0]
    assert note.by == "loop-breaker" and note.text.startswith("[loop-breaker]")
    assert len(note.text) <= 400
    assert outcomes[2].result.output == FAIL and outcomes[2].result.is_error
    kinds = [action.kind for action in outcomes[4].actions]
    assert "toast" in kinds and "transcript" in kinds
    assert terminal.runs == 5


async def test_uncounted_tools_neither_loop_nor_break_a_count(host: Host) -> None:
    terminal = Terminal()
    todo = Terminal(output="Todos have been modified", is_error=True)
    notes = []
    for index in range(3):
        for repeat in range(3):
            todo_call = ToolCall(
                session_id="s1",
                tool_use_id=f"todo{index}-{repeat}",
                tool="TodoWrite",
                input={"todos": []},
            )
            todo_outcome = await host.dispatch(todo_call, terminal=todo)
            assert not todo_outcome.result.notes and not todo_outcome.actions
        outcome = await host.dispatch(_call(index), terminal=terminal)
        notes.append(len(outcome.result.notes))
    assert notes == [0, 0, 1]
    assert todo.runs == 9


class _Dispatcher:
    """A plugin that runs tool calls of its own through `engine.dispatch` when asked."""

    plugin = PluginInfo(name="dispatcher", contract=">=1,<2")

    @hookimpl
    def register(self, on: Any, options: Any) -> None:
        async def run(engine: Engine, event: CommandRun, call_next: CallNext) -> CommandReply:
            notes = 0
            for index in range(4):
                result = await engine.dispatch(_call(100 + index), terminal=Terminal())
                notes += len(result.notes)
            return CommandReply(text=f"notes={notes}", by="dispatcher")

        on("command.run", run, match={"command": "spam"})


async def test_calls_dispatched_by_a_plugin_are_not_counted() -> None:
    async with Host(
        plugins=[loop_breaker, _Dispatcher()],
        entry_points=False,
        store="memory://",
        clock=FakeClock(start_ms=1),
        env={},
    ) as host:
        reply = await host.dispatch(CommandRun(session_id="s1", command="spam"))
        assert reply.result.text == "notes=0"
        # The model's own calls in the same session start from zero.
        terminal = Terminal()
        outcomes = [await host.dispatch(_call(i), terminal=terminal) for i in range(3)]
        assert [len(o.result.notes) for o in outcomes] == [0, 0, 1]


async def test_a_person_prompt_resets_streaks_but_a_notification_does_not(host: Host) -> None:
    terminal = Terminal()
    for index in range(2):
        await host.dispatch(_call(index), terminal=terminal)
    await host.dispatch(PromptSubmit(session_id="s1", text="done?", origin_kind="notification"))
    third = await host.dispatch(_call(3), terminal=terminal)
    assert len(third.result.notes) == 1

    for index in range(4, 6):
        await host.dispatch(_call(index, "make"), terminal=terminal)
    await host.dispatch(PromptSubmit(session_id="s1", text="try again", origin_kind="composer"))
    after = await host.dispatch(_call(7, "make"), terminal=terminal)
    assert after.result.notes == ()


async def test_sessions_are_kept_apart(host: Host) -> None:
    terminal = Terminal()
    for index in range(2):
        await host.dispatch(_call(index, session="a"), terminal=terminal)
        await host.dispatch(_call(index, session="b"), terminal=terminal)
    third = await host.dispatch(_call(3, session="a"), terminal=terminal)
    assert len(third.result.notes) == 1


async def test_auto_stop_denies_before_the_tool_runs() -> None:
    async with _host({"auto_stop": True}) as host:
        terminal = Terminal()
        for index in range(7):
            outcome = await host.dispatch(_call(index), terminal=terminal)
            assert outcome.result.denial is None
        stopped = await host.dispatch(_call(8), terminal=terminal)
        assert terminal.runs == 7
        assert stopped.result.denial is not None and stopped.result.denial.by == "loop-breaker"
        other = await host.dispatch(_call(9, "git status"), terminal=terminal)
        assert other.result.denial is None and terminal.runs == 8


async def test_stop_block_alert_and_stats_flushed_to_the_store(host: Host) -> None:
    feedback = "[uv run hooks/run_tests.py]: error: Failed to spawn: No such file or directory"

    async def blocked(event: TurnComplete) -> TurnResult:
        return TurnResult().continued(feedback, by="claude-code:stop-hook")

    outcomes = [
        await host.dispatch(
            TurnComplete(session_id="s1", turn_id="t1", stop_hook_active=index > 0),
            terminal=blocked,
        )
        for index in range(3)
    ]
    third = [(action.kind, action.by) for action in outcomes[2].actions]
    assert ("append", "loop-breaker") in third and ("toast", "loop-breaker") in third
    assert all(o.result.continuation is not None for o in outcomes)
    await host.dispatch(TurnComplete(session_id="s1", turn_id="t1", stop_hook_active=True))
    reply = await host.dispatch(CommandRun(session_id="s1", command="loop-breaker"))
    assert "stop-block" in reply.result.text
    stored = await host.store.namespace("loop-breaker").get("stats.v1")
    assert stored["totals"]["escalations"] == 1
    assert stored["by_detector"]["stop-block"]["nudges"] == 1


async def test_stats_from_many_sessions_add_up_at_session_end(host: Host) -> None:
    terminal = Terminal()
    for session in ("a", "b", "c"):
        for index in range(3):
            await host.dispatch(_call(index, session=session), terminal=terminal)
        await host.dispatch(SessionEnd(session_id=session))
    stored = await host.store.namespace("loop-breaker").get("stats.v1")
    assert stored["totals"]["nudges"] == 3
    assert stored["totals"]["loops_detected"] == 3


async def test_command_off_on_and_ignore(host: Host) -> None:
    terminal = Terminal()
    await host.dispatch(SessionStart(session_id="s1"))
    off = await host.dispatch(CommandRun(session_id="s1", command="loop-breaker", arguments="off"))
    assert "paused" in off.result.text
    for index in range(3):
        quiet = await host.dispatch(_call(index), terminal=terminal)
    assert quiet.result.notes == ()
    await host.dispatch(CommandRun(session_id="s1", command="loop-breaker", arguments="on"))
    await host.dispatch(PromptSubmit(session_id="s1", text="go on"))

    ignored = await host.dispatch(
        CommandRun(session_id="s1", command="loop-breaker", arguments="ignore pytest")
    )
    assert "pytest" in ignored.result.text
    assert await host.store.namespace("loop-breaker").get("ignore.v1") == ["pytest"]
    for index in range(3):
        silent = await host.dispatch(_call(10 + index), terminal=terminal)
    assert silent.result.notes == ()
    other_failure = Terminal(output="make: *** No rule to make target 'all'")
    for index in range(3):
        loud = await host.dispatch(_call(20 + index, "make"), terminal=other_failure)
    assert len(loud.result.notes) == 1


async def test_ignore_entries_from_the_store_apply_to_new_sessions(host: Host) -> None:
    await host.store.namespace("loop-breaker").set("ignore.v1", ["pytest", 7, "x" * 500])
    terminal = Terminal()
    for index in range(3):
        outcome = await host.dispatch(_call(index, session="fresh"), terminal=terminal)
    assert outcome.result.notes == ()


async def test_command_refuses_bad_input(host: Host) -> None:
    bad = await host.dispatch(
        CommandRun(session_id="s1", command="loop-breaker", arguments="ignore " + "x" * 300)
    )
    assert "refused" in bad.result.text
    assert await host.store.namespace("loop-breaker").get("ignore.v1") is None
    unknown = await host.dispatch(
        CommandRun(session_id="s1", command="loop-breaker", arguments="explode")
    )
    assert "unknown" in unknown.result.text


async def test_damaged_state_fails_open_and_starts_over(host: Host) -> None:
    await host.session_store("s1").namespace("loop-breaker").set("core", {"version": 1})
    terminal = Terminal()
    outcomes = [await host.dispatch(_call(i), terminal=terminal) for i in range(3)]
    assert [len(o.result.notes) for o in outcomes] == [0, 0, 1]


async def test_unusual_outputs_pass_through_unchanged(host: Host) -> None:
    await host.session_store("s1").namespace("loop-breaker").set("core", {"version": 1})
    broken_output = {"not": "serialisable", "value": object()}
    terminal = Terminal()
    terminal.output = broken_output  # type: ignore[assignment]
    outcome = await host.dispatch(_call(0), terminal=terminal)
    assert outcome.result.output is broken_output


async def test_debug_timing_logs_percentiles_every_hundred_calls() -> None:
    terminal = Terminal(output="ok", is_error=False)
    async with _host(env={"LOOP_BREAKER_DEBUG": "1"}) as host:
        with capture_logs() as logged:
            for index in range(99):
                await host.dispatch(_call(index, f"echo {index}"), terminal=terminal)
            before = [entry for entry in logged if "p95" in str(entry.get("event"))]
            await host.dispatch(_call(100, "echo last"), terminal=terminal)
    after = [entry for entry in logged if "p95" in str(entry.get("event"))]
    assert before == [] and len(after) == 1
    assert "echo" not in str(after[0]["event"])


async def test_no_timing_logs_without_the_debug_switch(host: Host) -> None:
    terminal = Terminal(output="ok", is_error=False)
    with capture_logs() as logged:
        for index in range(100):
            await host.dispatch(_call(index, f"echo {index}"), terminal=terminal)
    assert not [entry for entry in logged if "p95" in str(entry.get("event"))]


async def test_overlong_ignore_options_are_reported_once_and_the_rest_apply() -> None:
    async with _host({"ignore": ["x" * 300, "pytest"]}) as host:
        with capture_logs() as logged:
            await host.dispatch(SessionStart(session_id="a"))
            await host.dispatch(SessionStart(session_id="b"))
        refused = [entry for entry in logged if "refused" in str(entry.get("event"))]
        assert len(refused) == 1
        terminal = Terminal()
        for index in range(3):
            outcome = await host.dispatch(_call(index), terminal=terminal)
        assert outcome.result.notes == ()


def _shared(folder: Path) -> StoreBackend:
    """A store that outlives a host, as a restarted or short-lived host finds it."""
    return open_backend(f"sqlite:///{folder / 'store.db'}")


async def test_a_host_per_hook_call_loses_no_call(tmp_path: Path) -> None:
    # Without a warm host every event runs in a fresh one: the state must reach the store.
    backend = _shared(tmp_path)
    terminal = Terminal()
    notes = []
    for index in range(3):
        async with _host({"auto_stop": True}, store=backend) as host:
            outcome = await host.dispatch(_call(index), terminal=terminal)
            notes.append(len(outcome.result.notes))
    assert notes == [0, 0, 1]
    await backend.aclose()


async def test_a_warm_host_stores_the_state_at_turn_end_for_a_restarted_one(
    tmp_path: Path,
) -> None:
    backend = _shared(tmp_path)
    terminal = Terminal()
    async with _host(store=backend) as warm:
        await warm.dispatch(SessionStart(session_id="s1"))
        for index in range(2):
            await warm.dispatch(_call(index), terminal=terminal)
        await warm.dispatch(TurnComplete(session_id="s1", turn_id="t1"))
    async with _host(store=backend) as restarted:
        third = await restarted.dispatch(_call(2), terminal=terminal)
    assert len(third.result.notes) == 1
    await backend.aclose()


async def test_session_end_forgets_the_session(host: Host) -> None:
    terminal = Terminal()
    for index in range(2):
        await host.dispatch(_call(index), terminal=terminal)
    await host.dispatch(SessionEnd(session_id="s1"))
    again = await host.dispatch(_call(3), terminal=terminal)
    assert again.result.notes == ()


async def test_a_blocked_stop_leaves_the_stored_state_to_the_turn_end(tmp_path: Path) -> None:
    backend = _shared(tmp_path)
    terminal = Terminal()

    async def blocked(event: TurnComplete) -> TurnResult:
        return TurnResult().continued("tests still fail", by="claude-code:stop-hook")

    async with _host(store=backend) as warm:
        state = warm.session_store("s1").namespace("loop-breaker")
        await warm.dispatch(SessionStart(session_id="s1"))
        for index in range(2):
            await warm.dispatch(_call(index), terminal=terminal)
        await warm.dispatch(TurnComplete(session_id="s1", turn_id="t1"), terminal=blocked)
        # Stored by the first call (the host was cold then), not since: the turn goes on.
        assert (await state.get("core"))["observed"] == 1
        await warm.dispatch(TurnComplete(session_id="s1", turn_id="t1", stop_hook_active=True))
        stored = await state.get("core")
        assert stored["observed"] == 2
        assert stored["stop_streaks"] == {}
    await backend.aclose()


async def test_a_process_local_store_gets_no_copy_at_turn_end_but_the_command_sees_counts(
    host: Host,
) -> None:
    state = host.session_store("s1").namespace("loop-breaker")
    totals = host.store.namespace("loop-breaker")
    terminal = Terminal()
    await host.dispatch(SessionStart(session_id="s1"))
    for index in range(3):
        await host.dispatch(_call(index), terminal=terminal)
    await host.dispatch(TurnComplete(session_id="s1", turn_id="t1"))
    # Nobody but this host reads a memory store: no write-behind copy, no counts yet.
    assert await state.get("core") is None
    assert await totals.get("stats.v1") is None
    # Another session's command reads the totals: every session's counts are there first.
    reply = await host.dispatch(CommandRun(session_id="s2", command="loop-breaker"))
    assert "  nudges: 1" in reply.result.text
    assert (await totals.get("stats.v1"))["totals"]["nudges"] == 1
    await host.dispatch(SessionEnd(session_id="s1"))
    assert (await totals.get("stats.v1"))["totals"]["nudges"] == 1


async def _evicted_session_goes_on(host: Host) -> tuple[int, Any]:
    terminal = Terminal()
    await host.dispatch(SessionStart(session_id="a"))
    await host.dispatch(_call(0, session="a"), terminal=terminal)
    await host.dispatch(TurnComplete(session_id="a", turn_id="t1"))
    await host.dispatch(_call(1, session="a"), terminal=terminal)
    # A second session pushes "a" out of memory (one session is held in this test).
    await host.dispatch(_call(0, "ls", session="b"), terminal=terminal)
    stored = await host.session_store("a").namespace("loop-breaker").get("core")
    third = await host.dispatch(_call(2, session="a"), terminal=terminal)
    return len(third.result.notes), stored


async def test_a_process_local_store_keeps_a_session_that_leaves_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loop_breaker._runtime, "MAX_HOT_SESSIONS", 1)
    async with _host() as host:
        notes, stored = await _evicted_session_goes_on(host)
    # Written when it left memory: the third failure is the third one seen, nothing lost.
    assert notes == 1
    assert stored["observed"] == 2


async def test_a_shared_store_keeps_what_a_session_leaving_memory_changed_since_turn_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(loop_breaker._runtime, "MAX_HOT_SESSIONS", 1)
    backend = _shared(tmp_path)
    async with _host(store=backend) as host:
        notes, stored = await _evicted_session_goes_on(host)
    # Written when it left memory, as on a process-local store: the call after the turn end is
    # not lost, so the third failure is the third one seen.
    assert notes == 1
    assert stored["observed"] == 2
    await backend.aclose()


async def test_a_memory_backend_handed_to_two_hosts_in_turn_keeps_state_and_counts() -> None:
    # A backend object may outlive the host it was handed to: the turn end still writes behind.
    backend = open_backend("memory://")
    terminal = Terminal()
    async with _host(store=backend) as first:
        assert not first.store.process_local
        await first.dispatch(SessionStart(session_id="s1"))
        for index in range(3):
            await first.dispatch(_call(index), terminal=terminal)
        await first.dispatch(TurnComplete(session_id="s1", turn_id="t1"))
    async with _host(store=backend) as second:
        state = second.session_store("s1").namespace("loop-breaker")
        assert await state.get("core") is not None
        stats = await second.store.namespace("loop-breaker").get("stats.v1")
        assert stats["totals"]["nudges"] == 1
