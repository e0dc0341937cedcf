"""Wires host events to the pure core: observe calls, reset on prompts, flush counts, command."""

from __future__ import annotations

import time
from typing import Any

from framework import (
    ENGINE_ORIGIN,
    PERSON_ORIGIN_KINDS,
    CallNext,
    CommandReply,
    CommandRun,
    Engine,
    PromptResult,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    hookimpl,
)

from ._options import IGNORE_ENTRY_MAX_COUNT, IGNORE_ENTRY_MAX_LENGTH, Options
from ._runtime import IGNORE_KEY, PLUGIN_NAME, STATS_KEY, Runtime, ignore_list
from .core import MAIN_LOOP, Decision, LoopBreakerCore, Observation
from .core.normalize import NEVER_COUNTED_TOOLS, classify_outcome
from .core.report import render
from .core.result_text import text_and_source

COMMAND = "loop-breaker"
COMMAND_DESCRIPTION = "loop-breaker: show detected loops, the timeline and counts; off, on, ignore"
TOAST_MS = 8000


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
    runtime = Runtime(options)

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
                stop = await runtime.cores.use(
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
            core = runtime.cores.warm(engine, event)
            decisions = (
                core.observe(observation)
                if core is not None
                else await runtime.cores.use(engine, event, lambda core: core.observe(observation))
            )
            answered = _carry_out(engine, result, decisions) if decisions else result
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
                await runtime.cores.use(engine, event, lambda core: core.person_prompt(now))
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

            core = runtime.cores.warm(engine, event)
            decisions = (
                finish(core) if core is not None else await runtime.cores.use(engine, event, finish)
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
                await runtime.cores.write(engine)
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
        runtime.cores.forget(engine)
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


async def _command(engine: Engine, runtime: Runtime, event: CommandRun) -> str:
    arguments = event.arguments.strip()
    verb, _, rest = arguments.partition(" ")
    if verb == "":
        if engine.store.process_local:
            await runtime.flush_all()
        stored = await engine.store.get(STATS_KEY)
        return await runtime.cores.use(engine, event, lambda core: render(core, stored))
    if verb in ("off", "on"):
        paused = verb == "off"

        def pause(core: LoopBreakerCore) -> None:
            core.policy.paused = paused

        await runtime.cores.use(engine, event, pause)
        return f"{PLUGIN_NAME} is {'paused for this session' if paused else 'on'}."
    if verb == "ignore":
        entry = rest.strip()
        if not _valid_ignore(entry):
            return (
                f"{PLUGIN_NAME}: refused: an ignore entry is 1 to {IGNORE_ENTRY_MAX_LENGTH} "
                "printable characters (a signature or text of a label)."
            )

        def added(stored: object) -> list[str]:
            entries = ignore_list(stored)
            if entry not in entries:
                entries.append(entry)
            return entries[-IGNORE_ENTRY_MAX_COUNT:]

        entries = await engine.store.update(IGNORE_KEY, added)
        await runtime.cores.use(engine, event, lambda core: core.policy.set_ignores(list(entries)))
        return f"{PLUGIN_NAME}: will ignore loops matching {entry!r} from now on."
    return (
        f"{PLUGIN_NAME}: unknown argument {verb!r}. Use: /loop-breaker [off | on | ignore <text>]"
    )
