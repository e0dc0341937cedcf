"""refusal-watch's per-host state: session books, the passport verdict, the record log.

The handlers in `_register` only call down the chain and hand what they got to `Watch`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial

import anyio
from framework import (
    ContextBlock,
    ContextResult,
    Engine,
    SessionStart,
    StepStream,
    StreamChunk,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnStep,
    tap,
)

from . import _times
from ._dedup import TurnDedup, TurnKey, turn_key
from ._delivery import RecordLog, deliver, engine_time, engine_time_only, local_reading
from ._options import Options
from ._passport import PassportVerdict, check_passport, describe_verdict
from ._rule import BLOCK_NAME, plan_blocks
from ._switch import SWITCH_NAME, describe_diagnostic, read_switch
from ._taskstop import refusal_toast, status_text, stopped_task, task_stop_toast
from ._window import EntryDecision, RefusalWindow, Verdict

PLUGIN_NAME = "refusal-watch"
REFUSAL = "refusal"

local_clock: Callable[[], object] = _times.process_now_ms
"""The process's own clock, read before (and instead of) the engine clock; swapped in tests."""


@dataclass(slots=True)
class SessionBook:
    """What one session has seen; replaced at session.end so late work cannot leak into the next."""

    count: int = 0
    window: RefusalWindow = field(default_factory=RefusalWindow)
    dedup: TurnDedup = field(default_factory=TurnDedup)


@dataclass(frozen=True, slots=True)
class Sighting:
    """A refusal as recognised: where it came from and what the status and log show of it."""

    label: str
    turn_id: object
    agent_id: object
    model: object
    step_index: object = None


@dataclass(frozen=True, slots=True)
class StopEntry:
    """A TaskStop that entered while a window was open or a mark alive."""

    book: SessionBook
    decision: EntryDecision
    clock_ms: float | None


class Watch:
    """The per-host state of refusal-watch and its handlers."""

    def __init__(self, options: Options) -> None:
        self._options = options
        self._books: dict[str, SessionBook] = {}
        self._passport: PassportVerdict | None = None
        self._said: set[str] = set()
        self._log = RecordLog(keep=options.log_keep, wait_ms=options.write_wait_ms)

    @property
    def waiting_budget(self) -> float:
        """Own-time budget of handlers that wait for a record write: the wait plus headroom."""
        return self._options.write_wait_ms / 1000 + 2.0

    def book(self, session_id: str) -> SessionBook:
        book = self._books.get(session_id)
        if book is None:
            book = self._books[session_id] = SessionBook()
        return book

    def is_current(self, session_id: str, book: SessionBook) -> bool:
        return self._books.get(session_id) is book

    def say_once(self, engine: Engine, name: str, text: str) -> None:
        if name not in self._said:
            self._said.add(name)
            deliver(engine, "log", lambda line: engine.ui.log(line, level="warning"), text)

    # -- recognising a refusal -----------------------------------------------------------------

    def announce(self, engine: Engine, sighting: Sighting) -> None:
        """Toast and transcript line at once, before any clock is read."""
        text = refusal_toast(sighting.turn_id, sighting.agent_id, source=sighting.label)
        deliver(engine, "toast", engine.ui.toast, text)
        deliver(engine, "transcript", engine.transcript.line, text)

    def count(self, engine: Engine, book: SessionBook) -> int:
        """Bump the counter and set an opening mark stamped with local time."""
        book.count += 1
        return book.window.begin(local_reading(engine, local_clock).ms)

    async def settle(
        self, engine: Engine, session_id: str, book: SessionBook, seq: int, sighting: Sighting
    ) -> float | None:
        """Read the clock, turn the mark into the window, then show the status line."""
        fallback = _times.LocalReading(None)
        moment: float | None = None
        try:
            fallback = local_reading(engine, local_clock)
            moment = await engine_time(engine, fallback)
        finally:
            if self.is_current(session_id, book):
                book.window.settle(seq, moment)
            else:
                book.window.drop_mark(seq)
        if self.is_current(session_id, book):
            self.show_status(engine, book, sighting.model)
        return moment

    def show_status(self, engine: Engine, book: SessionBook, model: object) -> None:
        last = _times.hhmm(book.window.newest_time)
        deliver(
            engine,
            "status",
            engine.ui.status,
            status_text(count=book.count, last_hhmm=last, model=model),
        )

    def fields(self, session_id: str, book: SessionBook, sighting: Sighting) -> dict[str, object]:
        return {
            "session": session_id,
            "turn": sighting.turn_id,
            "agent": sighting.agent_id,
            "model": sighting.model,
            "step": sighting.step_index,
            "count": book.count if self.is_current(session_id, book) else None,
        }

    # -- what the handlers hand over -----------------------------------------------------------

    def watch_step(self, engine: Engine, event: TurnStep, stream: StepStream) -> StepStream:
        """The step's stream, tapped: its first refusal stop chunk is announced and counted."""
        step = _StepWatch(self, engine, event, self.book(event.session_id))
        return tap(stream, on_chunk=step.on_chunk, on_end=step.on_end)

    def refused(self, engine: Engine, event: TurnStep, book: SessionBook) -> None:
        """A step's first refusal stop chunk: announced at once, then counted and logged."""
        session_id = event.session_id
        # Made only for a refusal: most steps never need one.
        sighting = Sighting("step", event.turn_id, event.agent_id, event.model, event.step_index)
        self.announce(engine, sighting)
        if self.is_current(session_id, book):
            book.dedup.arm(turn_key(event.agent_id, event.turn_id), event.model)
            seq = self.count(engine, book)
            engine.spawn(self.settle_and_log, engine, session_id, book, seq, sighting)
        else:
            engine.spawn(self.log_late, engine, session_id, book, sighting)

    async def settle_and_log(
        self, engine: Engine, session_id: str, book: SessionBook, seq: int, sighting: Sighting
    ) -> None:
        moment = await self.settle(engine, session_id, book, seq, sighting)
        await self._log.write(
            engine, sighting.label, moment, self.fields(session_id, book, sighting)
        )

    async def log_late(
        self, engine: Engine, session_id: str, book: SessionBook, sighting: Sighting
    ) -> None:
        moment = await engine_time(engine, local_reading(engine, local_clock))
        await self._log.write(
            engine, sighting.label, moment, self.fields(session_id, book, sighting)
        )

    def turn_completed(
        self, engine: Engine, event: TurnComplete, book: SessionBook
    ) -> Awaitable[None] | None:
        """Any readable end clears its turn's step record; a refused turn's end gives its report
        to await (None: nothing to wait for, as at most ends, which then cost no coroutine)."""
        session_id = event.session_id
        reason: object = event.reason
        if not isinstance(reason, str):
            return None
        if reason != REFUSAL:
            # An empty dedup has nothing to disarm: the key is not even built.
            if book.dedup and self.is_current(session_id, book):
                book.dedup.disarm(turn_key(event.agent_id, event.turn_id))
            return None
        key = turn_key(event.agent_id, event.turn_id)
        return self.report_complete(engine, event, session_id, book, key)

    async def report_complete(
        self,
        engine: Engine,
        event: TurnComplete,
        session_id: str,
        book: SessionBook,
        key: TurnKey | None,
    ) -> None:
        """A refused turn's end: announced, counted and logged unless its step already was.

        A refusal its step reported (same agent and turn) was shown, counted and logged there:
        the complete only refreshes the status, so the person hears of one refusal once.
        """
        sighting = Sighting("complete", event.turn_id, event.agent_id, engine.session.model)
        if self.is_current(session_id, book):
            armed = book.dedup.disarm(key)
            if armed is not None:
                self.show_status(engine, book, armed.model)
                return
        self.announce(engine, sighting)
        if not self.is_current(session_id, book):
            await self._log.wait_for(
                engine, lambda: self.log_late(engine, session_id, book, sighting)
            )
            return
        seq = self.count(engine, book)
        await self._log.wait_for(
            engine, lambda: self.settle_and_log(engine, session_id, book, seq, sighting)
        )

    async def task_stop_entry(self, engine: Engine, event: ToolCall) -> StopEntry | None:
        """Where a TaskStop entered, decided before the tool runs; None without a window."""
        book = self._books.get(event.session_id)
        if book is None:
            return None
        decision = book.window.decide_entry(local_reading(engine, local_clock).ms)
        if decision.verdict is Verdict.OUTSIDE:
            return None
        clock_ms = None
        if decision.verdict is Verdict.ASK_CLOCK:
            clock_ms = await engine_time_only(engine)
        return StopEntry(book, decision, clock_ms)

    async def task_stopped(
        self, engine: Engine, event: ToolCall, entry: StopEntry, result: ToolResult
    ) -> None:
        """A stop that entered inside the window and succeeded gets its toast and record."""
        session_id = event.session_id
        if not self.is_current(session_id, entry.book) or not entry.decision.settle(entry.clock_ms):
            return
        try:
            task = stopped_task(
                result.output, is_error=result.is_error, denied=result.denial is not None
            )
        except Exception:
            return
        if task is None:
            return
        deliver(engine, "toast", engine.ui.toast, task_stop_toast(task, event.agent_id))
        fields = {"session": session_id, "agent": event.agent_id, "task": task.task_id}

        async def log_stop() -> None:
            moment = await engine_time(engine, local_reading(engine, local_clock))
            await self._log.write(engine, "taskstop", moment, fields)

        await self._log.wait_for(engine, log_stop)

    def context(self, engine: Engine, result: ContextResult) -> ContextResult:
        """The context with the rule block placed, when the switch asks for it."""
        switch = read_switch(engine.env.get(SWITCH_NAME))
        if switch.diagnostic is not None:
            self.say_once(engine, switch.diagnostic, describe_diagnostic(switch.diagnostic))
        if not switch.enabled:
            return result
        blocks = tuple(result.blocks)
        carries = self._passport is not None and self._passport.carries_rule
        slots = plan_blocks([(block.name, block.text) for block in blocks], add_rule=not carries)
        merged: list[ContextBlock] = []
        for slot in slots:
            if slot.source is not None and slot.text is None:
                merged.append(blocks[slot.source])
            else:
                merged.append(ContextBlock(name=BLOCK_NAME, text=slot.text or "", by=PLUGIN_NAME))
        if tuple(merged) == blocks:
            return result
        return result.model_copy(update={"blocks": tuple(merged)})

    async def session_started(self, engine: Engine, event: SessionStart) -> None:
        """The passport, looked up once per host."""
        if self._passport is not None:
            return
        look = partial(
            check_passport,
            self._options.passports_dir,
            self._options.harness_dir,
            event.harness_version,
        )
        # File reads run in a worker thread so a slow disk never stalls the event loop; a
        # sandboxed host (a replay, a test) has no one else waiting and reads inline.
        verdict = look() if engine.sandboxed else await anyio.to_thread.run_sync(look)
        self._passport = verdict
        line = describe_verdict(verdict)
        if line is not None and verdict.diagnostic is not None:
            self.say_once(engine, verdict.diagnostic, line)

    def session_ended(self, session_id: str) -> None:
        """Late work of the ended session keeps its old book and touches no new one."""
        self._books.pop(session_id, None)


class _StepWatch:
    """One step's watch: its tap's callbacks are this object's bound methods (no closures)."""

    __slots__ = ("_book", "_engine", "_event", "_refused", "_watch")

    def __init__(self, watch: Watch, engine: Engine, event: TurnStep, book: SessionBook) -> None:
        self._watch = watch
        self._engine = engine
        self._event = event
        self._book = book
        self._refused = False

    def on_chunk(self, chunk: StreamChunk) -> None:
        # The stop reason first: it is None on every chunk but a step's last.
        if chunk.stop_reason != REFUSAL or chunk.kind != "stop" or self._refused:
            return
        self._refused = True
        self._watch.refused(self._engine, self._event, self._book)

    def on_end(self) -> None:
        book = self._book
        # An empty dedup has nothing to disarm: the key is not even built.
        if self._refused or not book.dedup:
            return
        event = self._event
        if self._watch.is_current(event.session_id, book):
            book.dedup.disarm(turn_key(event.agent_id, event.turn_id))
