"""One Claude Code hook call in, one answer out: sessions, turns and suspended `tool.call` chains.

Both transports (the Unix-socket client and HTTP hooks) hand raw payload bytes to `ClaudeBridge`,
so they share the same chains and the same suspended calls.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from framework.claude_code import mapping as cmap
from framework.claude_code.commands import declared_commands, parse_command
from framework.claude_code.mapping import subagent_type
from framework.core.chain import Outcome
from framework.core.contract import (
    CommandReply,
    CommandRun,
    ContextResult,
    PromptResult,
    StreamChunk,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    TurnStart,
    TurnStep,
)
from framework.core.dispatch import running_dispatch
from framework.core.engine import AgentInfo
from framework.core.host import Host
from framework.core.loading import load_failures
from framework.core.turns import agent_turn_id, main_turn_id

_log = structlog.get_logger("hookchain.claude")

TRANSCRIPT_TAIL_BYTES = 64 * 1024
DEFAULT_SUSPEND_TIMEOUT_S = 3600.0
STREAM_READ_TIMEOUT_S = 5.0
FINISHED_MEMORY = 4096
"""How many calls answered in full at PreToolUse are remembered, so their result is not replayed."""
TURN_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
"""Model activity that begins a turn when none is open; a prompt begins one once it is not
dropped (`framework.core.turns`)."""
STOP_FAILURE_WAIT_S = 0.5
"""How long a prompt after a turn that never stopped waits for that turn's StopFailure: Claude Code
runs StopFailure without waiting for it, so the next prompt's hook may reach the host first."""
MAX_PENDING_AGENT_TYPES = 64
COMMAND_EVENTS = frozenset({"UserPromptSubmit", "UserPromptExpansion"})


@dataclass(slots=True)
class _Suspended:
    """A `tool.call` chain held at its terminal until the tool's result arrives."""

    call: ToolCall
    host: Host
    reached: anyio.Event = field(default_factory=anyio.Event)
    resumed: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    at_terminal: bool = False
    final_input: Mapping[str, Any] | None = None
    early_actions: tuple[Any, ...] = ()
    tool_result: ToolResult | None = None
    outcome: Outcome | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    keys: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _SessionState:
    first_seen: float
    last_seen: float
    events: int = 0
    turns: int = 0
    in_turn: bool = False
    held: list[str] = field(default_factory=list)
    """Lines for the person from an answer Claude Code ignores (StopFailure), shown with the next
    answer it shows."""
    failure_done: anyio.Event | None = None
    started_types: deque[str] = field(default_factory=deque)
    """Subagent types of Task/Agent calls whose agent has not been seen yet, oldest first."""
    agents: set[str] = field(default_factory=set)


def _transcript_tail(payload: Mapping[str, Any]) -> list[bytes]:
    """The last lines of the session's transcript; none when absent or not a regular file."""
    if isinstance(payload.get("last_assistant_message"), str):
        return []
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path.endswith(".jsonl"):
        return []
    try:
        with Path(path).open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return []
    lines = data.splitlines()
    return lines[1:] if size > TRANSCRIPT_TAIL_BYTES else lines


async def _step_stream(last_message: str | None, stop_reason: str) -> AsyncIterator[StreamChunk]:
    if last_message:
        yield StreamChunk(kind="text", text=last_message)
    yield StreamChunk(kind="stop", stop_reason=stop_reason)


def _plugin_raised(error: BaseException) -> bool:
    """Whether `error` came out of plugin code rather than from this host being cancelled or
    stopped: a plugin's SystemExit, KeyboardInterrupt or stray CancelledError must end one
    answer, never the warm host and every session's suspended calls with it."""
    if isinstance(error, Exception):
        return True
    if isinstance(error, asyncio.CancelledError):
        task = asyncio.current_task()
        # A real cancellation (a deadline, the host stopping) is pending on the task.
        return task is not None and task.cancelling() == 0
    return isinstance(error, (SystemExit, KeyboardInterrupt, GeneratorExit))


class ClaudeBridge:
    """Turns Claude Code hook payloads into host dispatches and their outcomes into answers."""

    def __init__(
        self,
        host: Host,
        task_group: TaskGroup,
        *,
        suspend_timeout: float = DEFAULT_SUSPEND_TIMEOUT_S,
    ) -> None:
        self.host = host
        self._task_group = task_group
        self.suspend_timeout = suspend_timeout
        self._suspended: dict[str, deque[_Suspended]] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._sessions: dict[str, _SessionState] = {}
        self.started = time.time()
        self.served = 0
        self.payload_errors = 0
        self.dispatch_errors = 0
        self.replays = 0
        self.cancelled_calls = 0

    # -- what `hookchain status` shows --

    def holds_call(self, key: str) -> bool:
        """Whether a suspended call waits for the result of the call `key` (see `call_key`)."""
        return self._take_suspended(key) is not None

    @property
    def suspended_count(self) -> int:
        return sum(len(queue) for queue in self._suspended.values())

    def status(self) -> dict[str, Any]:
        failures = self.host.failures
        return {
            "uptime_s": round(time.time() - self.started, 1),
            "sessions": len(self._sessions),
            "events_served": self.served,
            "suspended_calls": self.suspended_count,
            "replayed_calls": self.replays,
            "cancelled_calls": self.cancelled_calls,
            "payload_errors": self.payload_errors,
            "dispatch_errors": self.dispatch_errors,
            "handler_failures": sum(failures.values()),
            "plugins": [
                {"name": p.name, "version": p.version, "status": p.status, "error": p.error}
                for p in self.host.plugins
            ],
        }

    def _not_loaded_lines(self) -> str:
        """One stderr line per plugin that was meant to load and did not: a session learns
        that a guard is missing, instead of working on without it unawares."""
        return "".join(
            f"hookchain: plugin {record.name} not loaded: {record.error or record.status}\n"
            for record in load_failures(self.host.plugins)
        )

    # -- one hook call --

    async def answer(self, raw: bytes, event_hint: str | None = None) -> cmap.HookAnswer:
        """The answer to one hook call; bad input or a failing chain fails open, never raises."""
        try:
            payload = cmap.parse_payload(raw, event_hint or None)
        except cmap.PayloadError as error:
            self.served += 1
            self.payload_errors += 1
            return cmap.payload_error_answer(error)
        return await self.answer_payload(payload)

    async def answer_payload(self, payload: dict[str, Any]) -> cmap.HookAnswer:
        """The answer to an already parsed payload (see `mapping.parse_payload`)."""
        self.served += 1
        try:
            answer = self._with_held(payload, await self._answer(payload))
            state = self._sessions.get(payload["session_id"])
            if state is not None and state.events == 1:
                missing = self._not_loaded_lines()
                if missing:  # once per session: its first answer
                    answer = replace(answer, stderr=missing + answer.stderr)
            return answer
        except cmap.PayloadError as error:
            self.payload_errors += 1
            return cmap.payload_error_answer(error)
        except BaseException as error:  # a chain failure must never block Claude Code
            if not _plugin_raised(error):
                raise
            self.dispatch_errors += 1
            _log.warning("hook dispatch failed", error_type=type(error).__name__)
            return cmap.HookAnswer(stderr=f"hookchain: hook failed ({type(error).__name__})\n")

    async def _answer(self, payload: dict[str, Any]) -> cmap.HookAnswer:
        name: str = payload["hook_event_name"]
        session = self._touch(payload["session_id"])
        cwd = payload.get("cwd")
        if isinstance(cwd, str):
            # Every payload says where the session works now; plugins read it as session.cwd.
            self.host.update_session(payload["session_id"], cwd=cwd)
        self._note_agents(payload, session)
        if name in COMMAND_EVENTS:
            # A plugin's slash command is answered here: no turn starts, the model sees nothing.
            command = self._command_of(payload)
            if command is not None:
                return await self._run_command(payload["session_id"], *command)
            if name == "UserPromptExpansion":
                outcome = await self.host.dispatch(cmap.classic(payload))
                return cmap.classic_answer(outcome.result, outcome.actions)
        if name == "UserPromptSubmit" and session.in_turn:
            await self._await_stop_failure(session)
        if name in TURN_EVENTS or (name == "Stop" and not session.in_turn):
            await self._maybe_start_turn(payload["session_id"], session)
        if name == "PreToolUse":
            return await self._pre_tool_use(payload)
        if name in ("PostToolUse", "PostToolUseFailure"):
            return await self._post_tool_use(payload)
        if name == "UserPromptSubmit":
            return await self._prompt(payload, session)
        if name == "SessionStart":
            return await self._session_start(payload)
        if name in cmap.STOP_EVENTS:
            return await self._stop(payload, session)
        if name == "SessionEnd":
            return await self._session_end(payload)
        if name == "StopFailure":
            return await self._stop_failure(payload, session)
        if name == "SubagentStart":
            await self._subagent_start(payload)
        outcome = await self.host.dispatch(cmap.classic(payload))
        return cmap.classic_answer(outcome.result, outcome.actions)

    def _command_of(self, payload: Mapping[str, Any]) -> tuple[str, str] | None:
        known = declared_commands(self.host)
        if not known:
            return None
        if payload["hook_event_name"] == "UserPromptExpansion":
            name, arguments = payload.get("command_name"), payload.get("command_args")
            if isinstance(name, str) and name in known:
                return name, arguments if isinstance(arguments, str) else ""
            return None
        prompt = payload.get("prompt")
        return parse_command(prompt, known) if isinstance(prompt, str) else None

    async def _run_command(self, session_id: str, name: str, arguments: str) -> cmap.HookAnswer:
        outcome = await self.host.dispatch(
            CommandRun(session_id=session_id, command=name, arguments=arguments)
        )
        reply = outcome.result if isinstance(outcome.result, CommandReply) else None
        return cmap.command_answer(name, reply, outcome.actions)

    def _note_agents(self, payload: Mapping[str, Any], session: _SessionState) -> None:
        """Record subagent types before the event's chain runs, so `engine.agents` (and rules such
        as a guard's per-agent-type presets) know the type: from `agent_type` where Claude Code
        sends it, else from the `subagent_type` of the Task/Agent call that started the agent."""
        name = payload["hook_event_name"]
        if name == "PreToolUse":
            tool_input = payload.get("tool_input")
            started = subagent_type(
                str(payload.get("tool_name", "")),
                tool_input if isinstance(tool_input, dict) else {},
            )
            if started is not None:
                session.started_types.append(started)
                while len(session.started_types) > MAX_PENDING_AGENT_TYPES:
                    session.started_types.popleft()
        agent = cmap.payload_agent(payload)
        if agent is None:
            return
        agent_id, kind = agent
        if agent_id in session.agents:
            return
        if kind is None and session.started_types:
            kind = session.started_types.popleft()
        elif kind is not None and kind in session.started_types:
            session.started_types.remove(kind)
        if kind is None:
            return
        session.agents.add(agent_id)
        self.host.note_agent(payload["session_id"], AgentInfo(id=agent_id, type=kind))

    def _touch(self, session_id: str) -> _SessionState:
        now = time.time()
        state = self._sessions.get(session_id)
        if state is None:
            state = self._sessions[session_id] = _SessionState(first_seen=now, last_seen=now)
        state.last_seen = now
        state.events += 1
        return state

    async def _maybe_start_turn(self, session_id: str, state: _SessionState) -> None:
        if state.in_turn:
            return
        state.in_turn = True
        state.turns += 1
        await self.host.dispatch(
            TurnStart(session_id=session_id, turn_id=self._turn_id(session_id))
        )

    async def _end_interrupted_turn(self, session_id: str, state: _SessionState) -> None:
        """A prompt while a turn is open: the person interrupted it, and Claude Code fires no
        Stop for that (see `framework.core.turns`)."""
        state.in_turn = False
        await self.host.dispatch(
            TurnComplete(
                session_id=session_id, turn_id=self._turn_id(session_id), reason="cancelled"
            )
        )

    def _turn_id(self, session_id: str) -> str:
        state = self._sessions.get(session_id)
        return main_turn_id(session_id, state.turns if state else 0)

    # -- tool calls --

    async def _pre_tool_use(self, payload: Mapping[str, Any]) -> cmap.HookAnswer:
        call = cmap.tool_call(payload)
        pending = _Suspended(call=call, host=self.host)
        self._park(call.tool_use_id, pending)
        self._task_group.start_soon(self._run_suspended, pending)
        await pending.reached.wait()
        if pending.at_terminal:
            if pending.final_input is not None and "tool_use_id" not in payload:
                # Claude Code reports the input it ran, so an old payload's key follows the change.
                key = cmap.input_key(call.session_id, call.tool, pending.final_input)
                if key != call.tool_use_id:
                    self._park(key, pending)
            return cmap.pre_tool_use_answer(call, None, pending.final_input, pending.early_actions)
        outcome = pending.outcome
        if outcome is None or not isinstance(outcome.result, ToolResult):
            return cmap.NO_ANSWER
        if outcome.result.denial is None:
            # The chain answered without the tool, yet Claude Code runs it: its result must not
            # run the chain a second time as if this host had never seen the call.
            self._remember_finished(call.tool_use_id)
        return cmap.pre_tool_use_answer(call, outcome.result, None, outcome.actions)

    def _remember_finished(self, key: str) -> None:
        self._finished[key] = None
        while len(self._finished) > FINISHED_MEMORY:
            self._finished.popitem(last=False)

    def _park(self, key: str, pending: _Suspended) -> None:
        self._suspended.setdefault(key, deque()).append(pending)
        pending.keys.append(key)

    def _unpark(self, pending: _Suspended) -> None:
        for key in pending.keys:
            queue = self._suspended.get(key)
            if queue is None:
                continue
            if pending in queue:
                queue.remove(pending)
            if not queue:
                del self._suspended[key]

    async def _run_suspended(self, pending: _Suspended) -> None:
        async def terminal(event: ToolCall) -> ToolResult:
            # Toasts and messages recorded on the way down reach Claude Code with the PreToolUse
            # answer, before the tool runs, rather than waiting for its result.
            dispatch = running_dispatch()
            pending.early_actions = tuple(dispatch.actions) if dispatch is not None else ()
            pending.at_terminal = True
            pending.final_input = event.input
            pending.reached.set()
            await pending.resumed.wait()
            assert pending.tool_result is not None
            return pending.tool_result

        pending.scope.deadline = anyio.current_time() + self.suspend_timeout
        try:
            with pending.scope:
                pending.outcome = await pending.host.dispatch(pending.call, terminal=terminal)
        except BaseException as error:
            if not _plugin_raised(error):
                raise
            self.dispatch_errors += 1
            _log.warning("tool.call chain failed", error_type=type(error).__name__)
        finally:
            if pending.scope.cancelled_caught:
                self.cancelled_calls += 1
                _log.info("suspended tool call cancelled", tool=pending.call.tool)
            self._unpark(pending)
            pending.reached.set()
            pending.done.set()

    def _take_suspended(self, key: str) -> _Suspended | None:
        for pending in self._suspended.get(key, ()):
            if pending.at_terminal and not pending.resumed.is_set():
                return pending
        return None

    async def _post_tool_use(self, payload: Mapping[str, Any]) -> cmap.HookAnswer:
        name: str = payload["hook_event_name"]
        recorded = cmap.tool_outcome(payload)
        key = cmap.call_key(payload)
        pending = self._take_suspended(key)
        if pending is None and key in self._finished:
            del self._finished[key]
            return cmap.NO_ANSWER
        if pending is None:
            return await self._replay(name, payload, recorded)
        pending.tool_result = recorded
        pending.resumed.set()
        await pending.done.wait()
        outcome = pending.outcome
        if outcome is None or not isinstance(outcome.result, ToolResult):
            return cmap.NO_ANSWER
        later = outcome.actions[len(pending.early_actions) :]
        return cmap.post_tool_use_answer(
            name, outcome.result, later, recorded=recorded, tool=pending.call.tool
        )

    async def _replay(
        self, name: str, payload: Mapping[str, Any], recorded: ToolResult
    ) -> cmap.HookAnswer:
        """A result for a call this host never saw (it restarted): run the chain around it now."""
        self.replays += 1
        _log.debug(
            "result for an unknown tool call: replaying its chain", tool=payload["tool_name"]
        )

        async def terminal(event: ToolCall) -> ToolResult:
            return recorded

        call = cmap.tool_call(payload)
        outcome = await self.host.dispatch(call, terminal=terminal)
        if not isinstance(outcome.result, ToolResult):
            return cmap.NO_ANSWER
        return cmap.post_tool_use_answer(
            name, outcome.result, outcome.actions, recorded=recorded, tool=call.tool
        )

    def cancel_session_calls(self, session_id: str) -> None:
        for queue in list(self._suspended.values()):
            for pending in list(queue):
                if pending.call.session_id == session_id:
                    pending.scope.cancel()

    def cancel_all(self) -> None:
        for queue in list(self._suspended.values()):
            for pending in list(queue):
                pending.scope.cancel()

    # -- prompts, sessions, turns --

    async def _context(self, session_id: str) -> tuple[ContextResult | None, list[Any]]:
        outcome = await self.host.dispatch(cmap.prompt_context({"session_id": session_id}))
        result = outcome.result if isinstance(outcome.result, ContextResult) else None
        return result, list(outcome.actions)

    async def _prompt(self, payload: Mapping[str, Any], session: _SessionState) -> cmap.HookAnswer:
        submitted = await self.host.dispatch(cmap.prompt_submit(payload))
        result = submitted.result if isinstance(submitted.result, PromptResult) else None
        if result is not None and result.drop is not None:
            return cmap.prompt_answer(result, None, submitted.actions)
        if session.in_turn:
            await self._end_interrupted_turn(payload["session_id"], session)
        await self._maybe_start_turn(payload["session_id"], session)
        context, actions = await self._context(payload["session_id"])
        return cmap.prompt_answer(result, context, [*submitted.actions, *actions])

    async def _session_start(self, payload: Mapping[str, Any]) -> cmap.HookAnswer:
        started = await self.host.dispatch(cmap.session_start(payload))
        context, actions = await self._context(payload["session_id"])
        return cmap.session_start_answer(context, [*started.actions, *actions])

    async def _stop(self, payload: Mapping[str, Any], session: _SessionState) -> cmap.HookAnswer:
        name: str = payload["hook_event_name"]
        session_id: str = payload["session_id"]
        is_main = name == "Stop"
        tail = await anyio.to_thread.run_sync(_transcript_tail, payload)
        agent = None if is_main else payload.get("agent_id")
        turn_id = self._turn_id(session_id) if is_main else agent_turn_id(session_id, agent or "?")
        turn = cmap.turn_complete(payload, turn_id, tail)
        actions = await self._step(turn)
        outcome = await self.host.dispatch(turn)
        result = outcome.result if isinstance(outcome.result, TurnResult) else None
        continued = result is not None and result.continuation is not None
        if is_main and not (continued and not turn.stop_hook_active):
            session.in_turn = False
        return cmap.stop_answer(name, turn, result, [*actions, *outcome.actions])

    async def _stop_failure(
        self, payload: Mapping[str, Any], session: _SessionState
    ) -> cmap.HookAnswer:
        """A turn ended by an API error (a refusal among them): its end runs as a Stop's does, so
        plugins see the same `turn.step` and `turn.complete` as in a replay. Claude Code ignores
        this hook's output, so what they show the person waits for the next answer it shows."""
        session_id: str = payload["session_id"]
        agent = payload.get("agent_id")
        is_main = not (isinstance(agent, str) and agent)
        if is_main:
            await self._maybe_start_turn(session_id, session)
        turn_id = self._turn_id(session_id) if is_main else agent_turn_id(session_id, str(agent))
        try:
            # Its `last_assistant_message` is Claude Code's error text: the transcript is read too.
            unread = {**payload, "last_assistant_message": None}
            tail = await anyio.to_thread.run_sync(_transcript_tail, unread)
            turn = cmap.stop_failure(payload, turn_id, tail)
            actions = await self._step(turn)
            outcome = await self.host.dispatch(turn)
            session.held += cmap.person_messages([*actions, *outcome.actions])
        finally:
            if is_main:
                session.in_turn = False
                if session.failure_done is not None:
                    session.failure_done.set()
        return cmap.NO_ANSWER

    async def _await_stop_failure(self, session: _SessionState) -> None:
        """A prompt while the last turn never stopped: it ended in a StopFailure still on its way
        (then its end and what it shows come first), or was interrupted (then the wait is cut)."""
        if session.failure_done is None or session.failure_done.is_set():
            session.failure_done = anyio.Event()
        with anyio.move_on_after(STOP_FAILURE_WAIT_S):
            await session.failure_done.wait()

    async def _subagent_start(self, payload: Mapping[str, Any]) -> None:
        """A subagent starts: the session's agents list knows it, and its turn starts as in a
        replay; its raw `classic.SubagentStart` (whose context goes into the subagent) follows."""
        agent = cmap.subagent(payload)
        if agent is None:
            return
        session_id: str = payload["session_id"]
        self.host.note_agent(session_id, agent)
        turn_id = agent_turn_id(session_id, agent.id)
        start = TurnStart(session_id=session_id, turn_id=turn_id, agent_id=agent.id)
        await self.host.dispatch(start)

    def _with_held(self, payload: Mapping[str, Any], answer: cmap.HookAnswer) -> cmap.HookAnswer:
        session = self._sessions.get(payload["session_id"])
        if session is None or not session.held:
            return answer
        shown = cmap.with_person_messages(payload["hook_event_name"], answer, session.held)
        if shown is None:
            return answer
        session.held = []
        return shown

    async def _step(self, turn: TurnComplete) -> list[Any]:
        """`turn.step` for the turn's last message, read to its end so stream watchers see it."""
        step = TurnStep(session_id=turn.session_id, turn_id=turn.turn_id, agent_id=turn.agent_id)

        async def terminal(event: TurnStep) -> AsyncIterator[StreamChunk]:
            return _step_stream(turn.last_message, turn.reason)

        outcome = await self.host.dispatch(step, terminal=terminal)
        stream = outcome.result
        with anyio.move_on_after(STREAM_READ_TIMEOUT_S):
            async for _chunk in stream:
                pass
        return [*outcome.actions, *self.host.take_pending(turn.session_id)]

    async def _session_end(self, payload: Mapping[str, Any]) -> cmap.HookAnswer:
        session_id: str = payload["session_id"]
        self.cancel_session_calls(session_id)
        await self.host.dispatch(cmap.session_end(payload))
        self._sessions.pop(session_id, None)
        return cmap.NO_ANSWER
