"""Wires host events to the pure core: observe calls, reset on prompts, flush counts, command."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from framework import (
    ENGINE_ORIGIN,
    PERSON_ORIGIN_KINDS,
    CallNext,
    CommandReply,
    CommandRun,
    Engine,
    Event,
    PromptResult,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    Store,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    hookimpl,
)

from ._options import IGNORE_ENTRY_MAX_COUNT, IGNORE_ENTRY_MAX_LENGTH, Options, core_config
from .core import MAIN_LOOP, CoreConfig, Decision, LoopBreakerCore, Observation
from .core.codec import dump, load
from .core.normalize import NEVER_COUNTED_TOOLS, classify_outcome
from .core.policy import Stats, merge_stats
from .core.report import render
from .core.result_text import text_and_source

PLUGIN_NAME = "loop-breaker"
COMMAND = "loop-breaker"
COMMAND_DESCRIPTION = "loop-breaker: show detected loops, the timeline and counts; off, on, ignore"
STATE_KEY = "core"
STATS_KEY = "stats.v1"
IGNORE_KEY = "ignore.v1"
TOAST_MS = 8000
TIMING_EVERY = 100
ERROR_TEXT_CAP = 120
MAX_HOT_SESSIONS = 256

T = TypeVar("T")


class _Runtime:
    """What one host keeps for the plugin: config, failures already logged, debug timings."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.config: CoreConfig
        self.config, self.refused_ignores = core_config(options)
        self.logged: set[str] = set()
        self.hot: OrderedDict[str, _HotCore] = OrderedDict()
        self.timings_ns: list[int] = []

    def log_once(self, engine: Engine, site: str, error: BaseException) -> None:
        """A failure of our own work, logged once per site, never with call content."""
        if site in self.logged:
            return
        self.logged.add(site)
        engine.ui.log(
            f"{PLUGIN_NAME}: {site} failed and was skipped (fail-open): {type(error).__name__}",
            level="warning",
        )

    def timing_on(self, engine: Engine) -> bool:
        return self.options.debug or engine.env.get("LOOP_BREAKER_DEBUG") == "1"

    def record_overhead(self, engine: Engine, elapsed_ns: int) -> None:
        self.timings_ns.append(elapsed_ns)
        if len(self.timings_ns) >= TIMING_EVERY:
            self.report_overhead(engine)

    def report_overhead(self, engine: Engine) -> None:
        if not self.timings_ns:
            return
        ordered = sorted(self.timings_ns)
        p50 = ordered[len(ordered) // 2] / 1000
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] / 1000
        engine.ui.log(
            f"{PLUGIN_NAME}: observer overhead over {len(ordered)} calls: "
            f"p50 {p50:.1f} us, p95 {p95:.1f} us"
        )
        self.timings_ns.clear()

    async def with_core(
        self, engine: Engine, event: Event, change: Callable[[LoopBreakerCore], T]
    ) -> T:
        """Runs `change` on this session's core, kept in memory while the host is warm.

        After a miss (a new session, a restarted host, or a host that lives for one hook call)
        the core is loaded from `engine.state`, and every change made while handling that same
        event is written back at once, so a short-lived host loses nothing. Once this host sees a
        second event of the session it is warm: the store copy is then written at main-loop turn
        end (`persist`). A process-local store (`memory://`) has no other host to read that copy:
        it is written only when the session leaves memory (`_drop`).
        """
        core = self.warm(engine, event)
        if core is not None:
            return change(core)
        # Loaded for this very event (or not in memory yet): its changes are written back now.
        hot = self.hot.get(engine.session.id) or await self._load(engine, event)
        outcome = change(hot.core)
        if not hot.state.process_local:
            await self.persist(engine)
        return outcome

    def warm(self, engine: Engine, event: Event) -> LoopBreakerCore | None:
        """This session's core when it is in memory and needs no write after `event` (what
        `with_core` then does, without a coroutine of its own); None when `with_core` must."""
        session_id = engine.session.id
        hot = self.hot.get(session_id)
        if hot is None:
            return None
        if hot.loaded_for is not None:
            if hot.loaded_for is event:
                return None
            hot.loaded_for = None
        self.hot.move_to_end(session_id)
        return hot.core

    async def _load(self, engine: Engine, event: Event) -> _HotCore:
        session_id = engine.session.id
        stored_ignores = _ignore_list(await engine.store.get(IGNORE_KEY))
        current = await engine.state.get(STATE_KEY)
        core = LoopBreakerCore(self.config)
        if current is not None:
            try:
                core = load(current, self.config)
            except ValueError:
                engine.ui.log(
                    f"{PLUGIN_NAME}: stored session state was unreadable and started over"
                )
        core.policy.set_ignores(stored_ignores)
        # A concurrent handler of the same session may have loaded it meanwhile: keep the first.
        hot = self.hot.setdefault(session_id, _HotCore(core, event, engine.state))
        while len(self.hot) > MAX_HOT_SESSIONS:
            await self._drop(engine, *self.hot.popitem(last=False))
        return hot

    async def _drop(self, engine: Engine, session_id: str, hot: _HotCore) -> None:
        """The oldest idle session leaves memory. A shared store holds its last turn end's copy
        already; a process-local one holds only what is written now: its counts and its core."""
        if not hot.state.process_local:
            return
        try:
            await self._add_stats(engine, hot)
            state = dump(hot.core)
            if state != hot.stored:
                await hot.state.set(STATE_KEY, state)
        except Exception:
            # Still in memory, and the next event of the session finds it there.
            self.hot[session_id] = hot
            self.hot.move_to_end(session_id, last=False)
            raise

    async def persist(self, engine: Engine) -> None:
        """Writes this session's in-memory core to `engine.state`."""
        hot = self.hot.get(engine.session.id)
        if hot is None:
            return
        state = dump(hot.core)
        # A turn without calls leaves the state as stored: no write needed.
        if state != hot.stored:
            await engine.state.set(STATE_KEY, state)
            hot.stored = state

    def forget(self, engine: Engine) -> None:
        """The session ended: its state goes with it."""
        self.hot.pop(engine.session.id, None)

    async def flush(self, engine: Engine, event: Event) -> None:
        """Adds this session's new counts to the store's totals in one atomic update."""
        taken: Stats = await self.with_core(engine, event, lambda core: core.policy.take_pending())
        if taken.is_empty():
            return
        try:
            await engine.store.update(STATS_KEY, lambda stored: merge_stats(stored, taken))
        except Exception:
            # Counts not written go back to the session, for the next flush.
            await self.with_core(engine, event, lambda core: core.policy.pending.add(taken))
            raise

    async def flush_all(self, engine: Engine) -> None:
        """Every session's new counts, for a reader of the totals when turn ends do not add
        them (a process-local store)."""
        for hot in list(self.hot.values()):
            await self._add_stats(engine, hot)

    async def _add_stats(self, engine: Engine, hot: _HotCore) -> None:
        taken: Stats = hot.core.policy.take_pending()
        if taken.is_empty():
            return
        try:
            await engine.store.update(STATS_KEY, lambda stored: merge_stats(stored, taken))
        except Exception:
            # Counts not written go back to the session, for the next flush.
            hot.core.policy.pending.add(taken)
            raise


@dataclass(slots=True)
class _HotCore:
    """A session's core in memory, and the event it was loaded for until another one comes."""

    core: LoopBreakerCore
    loaded_for: Event | None
    state: Store
    """The session's `engine.state`, for writing the core when it leaves memory."""
    stored: dict[str, Any] | None = None
    """What `engine.state` holds, as last read or written here."""


def _ignore_list(value: object) -> list[str]:
    """The store's ignore entries, whatever the store held: only sane strings count."""
    if not isinstance(value, list):
        return []
    entries = [
        entry
        for entry in value
        if isinstance(entry, str) and 0 < len(entry) <= IGNORE_ENTRY_MAX_LENGTH
    ]
    return entries[:IGNORE_ENTRY_MAX_COUNT]


def _carry_out(engine: Engine, result: ToolResult, decisions: list[Decision]) -> ToolResult:
    for decision in decisions:
        if decision.kind == "nudge":
            result = result.with_note(decision.text, by=PLUGIN_NAME)
        elif decision.kind == "escalate":
            engine.ui.toast(decision.text, timeout_ms=TOAST_MS)
            engine.transcript.line(decision.text)
    return result


def _counted_tool(tool: str) -> bool:
    return tool not in NEVER_COUNTED_TOOLS


def _valid_ignore(entry: str) -> bool:
    return 0 < len(entry) <= IGNORE_ENTRY_MAX_LENGTH and entry.isprintable()


@hookimpl
def register(on: Any, options: Options) -> None:
    runtime = _Runtime(options)

    async def on_session_start(engine: Engine, event: SessionStart, call_next: CallNext) -> Any:
        try:
            engine.commands.register(COMMAND, COMMAND_DESCRIPTION)
            if runtime.refused_ignores and "refused ignores" not in runtime.logged:
                runtime.logged.add("refused ignores")
                engine.ui.log(
                    f"{PLUGIN_NAME}: {runtime.refused_ignores} ignore entries refused (empty, "
                    f"longer than {IGNORE_ENTRY_MAX_LENGTH} or beyond {IGNORE_ENTRY_MAX_COUNT})",
                    level="warning",
                )
        except Exception as error:
            runtime.log_once(engine, "session.start", error)
        return await call_next(event)

    async def on_tool_call(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        if call_next.origin != ENGINE_ORIGIN or not options.enabled:
            result: ToolResult = await call_next(event)
            return result
        loop_id = event.agent_id or MAIN_LOOP
        if runtime.config.auto_stop:
            stop: Decision | None = None
            try:
                now = await engine.clock.now()
                stop = await runtime.with_core(
                    engine,
                    event,
                    lambda core: core.check_stop(loop_id, event.tool, event.input, now),
                )
            except Exception as error:
                runtime.log_once(engine, "auto-stop check", error)
            if stop is not None:
                engine.transcript.line(stop.text)
                return ToolResult.denied(stop.text, by=PLUGIN_NAME)
        result = await call_next(event)
        try:
            started = time.perf_counter_ns()
            now = await engine.clock.now()
            denial = result.denial
            if denial is None:
                text, source, source_chars = text_and_source(
                    event.tool, result.output, is_error=result.is_error
                )
            else:
                text, source, source_chars = denial.reason, None, 0
            # Positional, in field order (call_id, loop_id, tool, input, outcome, text, at_ms,
            # source, source_chars): built once per tool call, where keywords cost a lookup each.
            observation = Observation(
                event.tool_use_id,
                loop_id,
                event.tool,
                event.input,
                classify_outcome(result.is_error, denial is not None, text),
                text,
                now,
                source,
                source_chars,
            )
            core = runtime.warm(engine, event)
            decisions = (
                core.observe(observation)
                if core is not None
                else await runtime.with_core(engine, event, lambda core: core.observe(observation))
            )
            answered = _carry_out(engine, result, decisions)
            if runtime.timing_on(engine):
                runtime.record_overhead(engine, time.perf_counter_ns() - started)
            return answered
        except Exception as error:
            runtime.log_once(engine, "tool.call observer", error)
            return result

    async def on_prompt(engine: Engine, event: PromptSubmit, call_next: CallNext) -> PromptResult:
        entered: PromptResult = await call_next(event)
        # A dropped prompt never reached the model, and a notification is not the person speaking.
        if entered.drop is None and event.origin_kind in PERSON_ORIGIN_KINDS:
            try:
                now = await engine.clock.now()
                await runtime.with_core(engine, event, lambda core: core.person_prompt(now))
            except Exception as error:
                runtime.log_once(engine, "prompt.submit", error)
        return entered

    async def on_turn_complete(
        engine: Engine, event: TurnComplete, call_next: CallNext
    ) -> TurnResult:
        completed: TurnResult = await call_next(event)
        try:
            loop_id = event.agent_id or MAIN_LOOP
            continuation = completed.continuation
            blocked = continuation is not None
            feedback = continuation.reason if continuation is not None else ""
            now = await engine.clock.now()

            def finish(core: LoopBreakerCore) -> list[Decision]:
                decisions = core.turn_complete(loop_id, event.turn_id, blocked, feedback, now)
                if event.agent_id is None and not blocked:
                    core.turn_end()
                return decisions

            core = runtime.warm(engine, event)
            decisions = (
                finish(core) if core is not None else await runtime.with_core(engine, event, finish)
            )
            for decision in decisions:
                if decision.kind == "nudge":
                    await engine.session.append(decision.text)
                elif decision.kind == "escalate":
                    engine.ui.toast(decision.text, timeout_ms=TOAST_MS)
                    engine.transcript.line(decision.text)
            # A blocked Stop does not end the turn: the turn's counts and state wait for its end.
            # In a process-local store nobody reads them before the session ends or leaves
            # memory, or the command runs: those write them instead.
            if event.agent_id is None and not blocked and not engine.state.process_local:
                await runtime.flush(engine, event)
                await runtime.persist(engine)
        except Exception as error:
            runtime.log_once(engine, "turn.complete", error)
        return completed

    async def on_session_end(engine: Engine, event: SessionEnd, call_next: CallNext) -> Any:
        try:
            if runtime.timing_on(engine):
                runtime.report_overhead(engine)
            await runtime.flush(engine, event)
        except Exception as error:
            runtime.log_once(engine, "session.end", error)
        runtime.forget(engine)
        return await call_next(event)

    async def on_command(engine: Engine, event: CommandRun, call_next: CallNext) -> CommandReply:
        try:
            text = await _command(engine, runtime, event)
            return CommandReply(text=text, by=PLUGIN_NAME)
        except Exception as error:
            runtime.log_once(engine, "command.run", error)
            reply: CommandReply = await call_next(event)
            return reply

    on("session.start", on_session_start)
    # A tool the core never counts is never observed, and never repeats an armed loop (its calls
    # make no signature): its calls do not enter the handler at all.
    on("tool.call", on_tool_call, match={"tool": _counted_tool})
    on("prompt.submit", on_prompt)
    on("turn.complete", on_turn_complete)
    on("session.end", on_session_end)
    on("command.run", on_command, match={"command": COMMAND})


async def _command(engine: Engine, runtime: _Runtime, event: CommandRun) -> str:
    arguments = event.arguments.strip()
    verb, _, rest = arguments.partition(" ")
    if verb == "":
        if engine.store.process_local:
            await runtime.flush_all(engine)
        stored = await engine.store.get(STATS_KEY)
        return await runtime.with_core(engine, event, lambda core: render(core, stored))
    if verb in ("off", "on"):
        paused = verb == "off"

        def pause(core: LoopBreakerCore) -> None:
            core.policy.paused = paused

        await runtime.with_core(engine, event, pause)
        return f"{PLUGIN_NAME} is {'paused for this session' if paused else 'on'}."
    if verb == "ignore":
        entry = rest.strip()
        if not _valid_ignore(entry):
            return (
                f"{PLUGIN_NAME}: refused: an ignore entry is 1 to {IGNORE_ENTRY_MAX_LENGTH} "
                "printable characters (a signature or text of a label)."
            )

        def added(stored: object) -> list[str]:
            entries = _ignore_list(stored)
            if entry not in entries:
                entries.append(entry)
            return entries[-IGNORE_ENTRY_MAX_COUNT:]

        entries = await engine.store.update(IGNORE_KEY, added)
        await runtime.with_core(engine, event, lambda core: core.policy.set_ignores(list(entries)))
        return f"{PLUGIN_NAME}: will ignore loops matching {entry!r} from now on."
    return (
        f"{PLUGIN_NAME}: unknown argument {verb!r}. Use: /loop-breaker [off | on | ignore <text>]"
    )
