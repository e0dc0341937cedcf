"""The observer's per-host state and work: turns held in memory, live marks, the month log.

The handlers in `_register` call down the chain and hand what they got to `Observer`.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
from framework import (
    Engine,
    EnginePort,
    PromptSubmit,
    SessionCache,
    SessionStart,
    ToolCall,
    TurnComplete,
    TurnResult,
)

from observer._log_file import MonthLog, encode_line, encode_own_line, prepare_record_keys
from observer._options import Options
from observer._read_counter import (
    COUNTER_FILE,
    ReadCounter,
    load_counter,
    reminder_due,
    reminder_text,
    save_counter,
)
from observer._records import ObserverErrorMarker, iso_timestamp, new_episode_id
from observer._routing import gate_decision, parse_routing_tag
from observer._turn_facts import (
    EpisodeContext,
    PromptRules,
    SessionFacts,
    ToolRules,
    TurnFacts,
    TurnTally,
    episode_outside_values,
    episode_record,
    other_live_sessions,
    prepare_prompt_rules,
    read_prompt,
)

PLUGIN_NAME = "observer"
_TURN_KEY = "turn"
_SESSION_KEY = "session"
_LIVE_PREFIX = "live:"
MAX_HOT_SESSIONS = 256
_NO_FACTS = TurnFacts()

T = TypeVar("T")


@dataclass(slots=True)
class _Turn:
    """A session's running turn in memory (stored under `turn`), and on a process-local store
    the session's facts, which reach the store only when the session leaves memory."""

    tally: TurnTally
    session: SessionFacts | None = None


def _load_turn(stored: Any) -> _Turn:
    """The running turn from its stored copy; a `ValidationError` (a `ValueError`) starts the
    session's turn over."""
    return _Turn(TurnTally(TurnFacts.model_validate(stored or {})))


def _stored_turn(turn: _Turn) -> dict[str, Any] | None:
    return turn.tally.stored()


async def _write_session_facts(engine: EnginePort, turn: _Turn) -> None:
    """A session leaving memory: a process-local store gets the facts this host kept of it only
    in memory (a shared one holds them already, counted in place)."""
    if turn.session is not None and engine.state.process_local:
        await engine.state.set(_SESSION_KEY, _session_values(turn.session, turn.session.turns))


class Observer:
    """The observer's handlers, bound to one set of options."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.prompt_rules = PromptRules(
            methods=options.methods,
            method_patterns=options.method_patterns,
            correction_cues=options.correction_cues,
            task_ref_pattern=options.task_ref_pattern,
        )
        self.tool_rules = ToolRules(edit_tools=options.edit_tools, node_fields=options.node_fields)
        prepare_prompt_rules(self.prompt_rules)
        prepare_record_keys()
        # After a miss (a new session, a restarted host, or a host that lives for one hook call)
        # the turn is loaded from `engine.state`, and what handling that same event changes is
        # written back at once, so a short-lived host loses nothing. Once this host sees a second
        # event of the session it is warm: a tool call then only counts in memory, and the facts
        # reach the store when the turn ends (the episode) or a prompt starts one. On a
        # process-local store nobody else reads them: they reach it only when the session
        # leaves memory.
        self.turns: SessionCache[_Turn] = SessionCache(
            _TURN_KEY,
            load=_load_turn,
            dump=_stored_turn,
            max_sessions=MAX_HOT_SESSIONS,
            leaving=_write_session_facts,
        )
        self._sandbox_dir: Path | None = None
        self._sandbox_counter: ReadCounter | None = None
        # A process-local store's live marks, kept here instead: session -> (ms, wall expiry).
        self._live: dict[str, tuple[int, float]] = {}
        self.log = MonthLog()
        # The kept month file is closed at `session.end`, or when this host's observer goes.
        weakref.finalize(self, self.log.close)

    def data_dir(self, engine: Engine) -> Path:
        if engine.sandboxed:
            # A sandboxed host's folder is always `<sandbox>/observer` (whatever the session's
            # workspace), and this observer serves one host: the path is built once.
            if self._sandbox_dir is None:
                self._sandbox_dir = engine.data_dir(self.options.data_dir)
            return self._sandbox_dir
        return engine.data_dir(self.options.data_dir)

    async def session_started(self, engine: Engine, event: SessionStart) -> None:
        """The session's facts begun, its live mark set, the unread reminder when due."""
        try:
            await self._start(engine, event)
        except Exception as error:
            await self._write_error(engine, event.session_id, None, "session.start", error)

    async def prompt_submitted(self, engine: Engine, event: PromptSubmit) -> None:
        """A person's prompt that was not dropped starts the turn's facts."""
        try:
            # Only derived, content-free facts are kept: the prompt text never reaches the store.
            prompt = read_prompt(event.text, self.prompt_rules)
            turn = await self.turns.get(engine, event)
            turn.tally = TurnTally.started_by(prompt)
            # Stored by warm hosts too, so that a restarted host still knows the turn's prompt
            # (a process-local store outlives no host: it gets it when the session leaves memory).
            await self.turns.write(engine)
        except Exception as error:
            await self._write_error(engine, event.session_id, None, "prompt.submit", error)

    def tool_called(self, engine: Engine, event: ToolCall) -> Awaitable[None] | None:
        """One more call the model made in the running turn, whatever became of it: counted at
        once on the warm path (the usual one), which makes no coroutine; else the work left to
        await (loading the turn, or writing the error marker)."""
        try:
            turn = self.turns.warm(engine, event)
            if turn is None:
                return self._count_cold(engine, event)
            turn.tally.count(event.tool, event.input, self.tool_rules)
        except Exception as error:
            return self._write_error(engine, event.session_id, None, "tool.call", error)
        return None

    async def _count_cold(self, engine: Engine, event: ToolCall) -> None:
        try:
            await self.turns.use(engine, event, partial(self._count, event))
        except Exception as error:
            await self._write_error(engine, event.session_id, None, "tool.call", error)

    async def turn_completed(
        self, engine: Engine, event: TurnComplete, result: TurnResult
    ) -> TurnResult:
        """A main turn that ends: its episode (or the routing gate's continuation)."""
        try:
            return await self._finish_turn(engine, event, result)
        except Exception as error:
            await self._write_error(engine, event.session_id, event.turn_id, "turn.complete", error)
            return result

    def _count(self, event: ToolCall, turn: _Turn) -> None:
        turn.tally.count(event.tool, event.input, self.tool_rules)

    async def session_ended(self, engine: Engine) -> None:
        # The session's state goes with it; so does its turn in memory.
        self.turns.forget(engine)
        await _off_loop(engine, self.log.close)

    async def _start(self, engine: Engine, event: SessionStart) -> None:
        now = await engine.clock.now()

        if engine.state.process_local:
            # Nobody else reads this session's state: the host holds the session from its start,
            # and keeps its facts in memory (read from the store only when it did not hold them).
            turn = await self.turns.get(engine, event)
            if turn.session is None:
                stored = await engine.state.get(_SESSION_KEY)
                turn.session = _begun(SessionFacts.model_validate(stored or {}), event)
            else:
                turn.session = _begun(turn.session, event)
        else:
            begun: list[SessionFacts] = []

            def begin(stored: Any) -> Any:
                begun[:] = [_begun(SessionFacts.model_validate(stored or {}), event)]
                return begun[0].model_dump(mode="json")

            await engine.state.update(_SESSION_KEY, begin, default={})
        await self._heartbeat(engine, now)
        if engine.sandboxed:
            self._remind_in_memory(engine, now)
            return
        data_dir = self.data_dir(engine)
        counter = await _off_loop(engine, load_counter, data_dir, now)
        if reminder_due(counter, now, self.options.unread_weeks):
            engine.ui.toast(reminder_text(counter, now))
            counter = counter.model_copy(update={"last_reminded_ms": now})
            await _off_loop(engine, save_counter, data_dir, counter)
        elif not (data_dir / COUNTER_FILE).exists():
            # Start the clock for "unread" the first time the observer sees this workspace.
            await _off_loop(engine, save_counter, data_dir, counter)

    def _remind_in_memory(self, engine: Engine, now: int) -> None:
        """The read counter of a sandboxed host: the same reminders, kept for the host's life.

        Nobody reads a sandbox's log through the CLI, and its folder is thrown away with it, so
        the counter is not written there: it starts when the host first starts a session.
        """
        counter = self._sandbox_counter or ReadCounter(first_seen_ms=now)
        if reminder_due(counter, now, self.options.unread_weeks):
            engine.ui.toast(reminder_text(counter, now))
            counter = counter.model_copy(update={"last_reminded_ms": now})
        self._sandbox_counter = counter

    async def _heartbeat(self, engine: Engine, now: int) -> bool:
        """Mark this session live; whether another session was live within the window."""
        window_ms = self.options.parallel_window_minutes * 60_000
        if engine.store.process_local:
            return self._local_heartbeat(engine.session.id, now, window_ms)
        own = f"{_LIVE_PREFIX}{engine.session.id}"
        await engine.store.set(own, now, ttl=window_ms / 1000)
        beats: dict[str, int] = {}
        for key in await engine.store.keys(_LIVE_PREFIX):
            if key == own:
                continue  # only the others count, and this one was just written
            seen = await engine.store.get(key)
            if isinstance(seen, int):
                beats[key.removeprefix(_LIVE_PREFIX)] = seen
        return other_live_sessions(beats, engine.session.id, now, window_ms)

    def _local_heartbeat(self, session_id: str, now: int, window_ms: int) -> bool:
        """`_heartbeat` for a process-local store: only this host's sessions could read the marks,
        so they are kept here, each expiring like the store's key would (its TTL in wall time)."""
        wall = time.time()
        live = self._live
        live[session_id] = (now, wall + window_ms / 1000)
        beats: dict[str, int] = {}
        for other, (seen, expires) in list(live.items()):
            if expires <= wall:
                del live[other]
            elif other != session_id:
                beats[other] = seen
        return other_live_sessions(beats, session_id, now, window_ms)

    async def _finish_turn(
        self, engine: Engine, event: TurnComplete, result: TurnResult
    ) -> TurnResult:
        # The warm path (the usual one) finds the turn without a coroutine, as a tool call does.
        turn = self.turns.warm(engine, event) or await self.turns.get(engine, event)
        # Taken before any await: a call counted meanwhile is not this episode's.
        facts = turn.tally.snapshot()
        if self.options.routing_gate:
            instruction = gate_decision(
                dictated=facts.prompt.dictated,
                last_message=event.last_message,
                stop_hook_active=event.stop_hook_active,
                already_fired=facts.gate_fired_for == event.turn_id,
            )
            if instruction is not None:
                turn.tally.gate_fired_for = event.turn_id
                await self.turns.write(engine)
                return result.continued(instruction, by=PLUGIN_NAME)
        now = await engine.clock.now()
        session = await self._count_turn(engine, turn)
        parallel = await self._heartbeat(engine, now)
        economy_env = self.options.economy_level_env
        context = EpisodeContext(
            episode_id=new_episode_id(),
            ms=now,
            session_id=event.session_id,
            turn_id=event.turn_id,
            harness=event.harness,
            session_turn=session.turns + 1,
            parallel_session=parallel,
            economy_level=engine.env.get(economy_env) if economy_env else None,
        )
        tag = parse_routing_tag(event.last_message)
        record = episode_record(facts, session, tag, context)
        await self._write(engine, encode_own_line(record, episode_outside_values(record)), now)
        turn.tally = TurnTally.started_by(_NO_FACTS.prompt)
        # An empty turn is not stored: its key is deleted (a shared store only).
        await self.turns.write(engine)
        return result

    async def _count_turn(self, engine: Engine, turn: _Turn) -> SessionFacts:
        """The session's facts before this turn; the store then holds them with one more turn.

        Counted in one atomic update of the stored facts, so two hosts serving one session on a
        shared store never count the same turn twice (a warm host on a process-local store, the
        only one that can read them, counts its held facts instead: `_count_held_turn`).
        """
        if turn.session is not None and engine.state.process_local:
            return self._count_held_turn(turn, turn.session)
        counted: list[SessionFacts] = []

        def next_turn(stored: Any) -> Any:
            facts = SessionFacts.model_validate(stored or {})
            # The facts are kept from the last run of this function (the store may run it more
            # than once) rather than validated a second time from the store.
            counted[:] = [facts]
            return _session_values(facts, facts.turns + 1)

        await engine.state.update(_SESSION_KEY, next_turn, default={})
        if engine.state.process_local:
            # Held from now on (this host did not hold them: it took the session over mid-way).
            return self._count_held_turn(turn, counted[0])
        return counted[0]

    @staticmethod
    def _count_held_turn(turn: _Turn, session: SessionFacts) -> SessionFacts:
        """Hold the session's facts with one more turn; the facts before it are returned."""
        turn.session = SessionFacts(
            turns=session.turns + 1, model=session.model, post_compaction=session.post_compaction
        )
        return session

    async def _write_error(
        self, engine: Engine, session_id: str, turn_id: str | None, stage: str, error: Exception
    ) -> None:
        """Leave a marker instead of a silent gap; only the error's type is recorded."""
        now = await engine.clock.now()
        marker = ObserverErrorMarker(
            ts=iso_timestamp(now),
            session_id=session_id,
            turn_id=turn_id,
            stage=stage,
            error_type=type(error).__name__,
        )
        await self._append(engine, marker.model_dump(mode="json"), now)

    async def _append(self, engine: Engine, record: dict[str, Any], now: int) -> None:
        await self._write(engine, encode_line(record), now)

    async def _write(self, engine: Engine, line: bytes, now: int) -> None:
        """A real log line is fsynced off the event loop; a sandboxed host's log is throwaway."""
        data_dir = self.data_dir(engine)
        if engine.sandboxed:
            # What `_off_loop` does for a sandboxed host, without a coroutine of its own per line.
            # Its folder is new to each sandbox (unless an earlier host of the same sandbox wrote
            # there): created before it is looked up.
            self.log.write(data_dir, line, now, durable=False, new_folder_likely=True)
            return
        await _off_loop(engine, self.log.write, data_dir, line, now, durable=True)


def _begun(session: SessionFacts, event: SessionStart) -> SessionFacts:
    """The session's facts once `event` has started it (again)."""
    compacted = event.source == "compact" or (session.post_compaction and event.source != "clear")
    return session.model_copy(
        update={"model": event.model or session.model, "post_compaction": compacted}
    )


def _session_values(session: SessionFacts, turns: int) -> dict[str, Any]:
    """The stored form of the session's facts: the plain values of `model_dump`."""
    return {"turns": turns, "model": session.model, "post_compaction": session.post_compaction}


async def _off_loop(engine: Engine, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """File work runs in a worker thread, so an fsync never stalls the event loop; a sandboxed
    host's throwaway files are written without fsync and inline, sparing the thread hop."""
    if engine.sandboxed:
        return work(*args, **kwargs)
    return await anyio.to_thread.run_sync(partial(work, *args, **kwargs))
