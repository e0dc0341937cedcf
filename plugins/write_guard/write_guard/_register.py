"""Wire write-guard to `tool.call`: protected paths (fail closed), presets and the git gate."""

from __future__ import annotations

import os
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any

from framework import ENGINE_ORIGIN, CallNext, Engine, ToolCall, ToolResult, hookimpl

from write_guard._approvals import (
    approval_key,
    approved_commands,
    consumer,
    new_approval,
    why_unusable,
    won,
)
from write_guard._decide import (
    GitHold,
    Resolved,
    git_hold,
    git_hold_denial,
    preset_denial,
    protected_denial,
    resolve_all,
)
from write_guard._options import Options
from write_guard._paths import PathContext
from write_guard._policy import BUILTIN_PROTECTED_PATTERNS, Policy, prepare_patterns
from write_guard._surface import Surface, extract_surface

PLUGIN = "write-guard"
WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "notebookedit", "bash", "apply_patch",
                         "applypatch", "patch"})  # fmt: skip
HELD_PREFIX = "held:"
RECORD_TTL_S = 24 * 3600.0
DECISIONS_KEPT = 8
BUILT_KEPT = 64


@dataclass(slots=True)
class _Decision:
    """What both handlers of one tool call work out alike: surface, context, policy, paths."""

    event: ToolCall
    surface: Surface
    paths: tuple[PathContext, Policy, Resolved] | None = None


def is_write_tool(tool: str) -> bool:
    return tool.casefold() in WRITE_TOOLS


class Guard:
    """Per-host state: options, the setup directory and the one-time cwd warning."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.setup_dir = os.getcwd()
        self.cwd_warned = False
        # The host's own files (its store holds the approvals), learnt from the first event.
        self.host_paths: tuple[str, ...] | None = None
        self.default_home = os.path.expanduser("~")
        # The fail-closed and the fail-open handler see the same call back to back; each works
        # it out once. Keyed by the event object itself, so a handler in between that replaces
        # the event gets a fresh decision.
        self.decisions: deque[_Decision] = deque(maxlen=DECISIONS_KEPT)
        # Context and policy depend only on these inputs and the options, fixed per host.
        self.built: dict[
            tuple[str, str | None, str | None, str | None], tuple[PathContext, Policy]
        ] = {}
        # Without protected globs in the options, every policy uses the built-in patterns.
        prepare_patterns(BUILTIN_PROTECTED_PATTERNS)

    def decision(self, event: ToolCall) -> _Decision:
        for known in self.decisions:
            if known.event is event:
                return known
        made = _Decision(event, extract_surface(event.tool, event.input))
        self.decisions.append(made)
        return made

    def known_paths(
        self, engine: Engine, event: ToolCall, decision: _Decision
    ) -> tuple[PathContext, Policy, Resolved] | None:
        """The decision's context, policy and targets when no await is needed for them: worked
        out already, or a main-loop call (no agent id, so no type to look up: no coroutine)."""
        if decision.paths is not None:
            return decision.paths
        if event.agent_id is None:
            return self.settle(engine, decision, None)
        return None

    def settle(
        self, engine: Engine, decision: _Decision, agent_type: str | None
    ) -> tuple[PathContext, Policy, Resolved]:
        """The decision's context, policy and resolved targets, worked out once for both
        handlers. Synchronous: the only await it needs, the subagent's type, is left to the
        caller, so a main-loop call costs no coroutine here."""
        paths = decision.paths
        if paths is None:
            if self.host_paths is None:
                self.host_paths = engine.host_files
            context, policy = self.build(
                self.session_cwd(engine),
                engine.env.get("CLAUDE_PROJECT_DIR"),
                engine.env.get("HOME"),
                agent_type,
            )
            paths = decision.paths = (context, policy, resolve_all(decision.surface, context))
        return paths

    def session_cwd(self, engine: Engine) -> str:
        """The session's cwd; without one (a host that never saw the session start) the setup
        directory, with one warning per host."""
        cwd = engine.session.cwd
        if cwd:
            return cwd
        if not self.cwd_warned:
            self.cwd_warned = True
            engine.ui.log("the session has no cwd; using the setup directory", level="warning")
        return self.setup_dir

    def build(
        self, cwd: str, project: str | None, home: str | None, agent_type: str | None
    ) -> tuple[PathContext, Policy]:
        """The path context and policy for one event (pure apart from the options)."""
        key = (cwd, project, home, agent_type)
        built = self.built.get(key)
        if built is None:
            if len(self.built) >= BUILT_KEPT:
                self.built.clear()
            built = self.built[key] = self._build(cwd, project, home, agent_type)
        return built

    def _build(
        self, cwd: str, project: str | None, home: str | None, agent_type: str | None
    ) -> tuple[PathContext, Policy]:
        options = self.options
        root = options.workspace_root or project or cwd
        context = PathContext(
            cwd=cwd,
            home=home or self.default_home,
            project_dir=project or None,
            case_insensitive=options.case_insensitive,
        )
        patterns = list(BUILTIN_PROTECTED_PATTERNS)
        protected = list(self.host_paths or ())
        for entry in options.protected_paths:
            anchored = os.path.join(root, os.path.expanduser(entry))
            if "*" in entry:
                patterns.append(anchored.casefold())
            else:
                protected.append(os.path.normpath(anchored))
        policy = Policy(
            preset=options.preset_for(agent_type),
            workspace_root=root,
            extra_roots=tuple(
                _home_relative(r, context.home) for r in options.extra_writable_roots
            ),
            protected_paths=tuple(protected),
            protected_patterns=tuple(patterns),
            orchestrator=options.orchestrator_lists(),
            case_insensitive=options.case_insensitive,
        )
        return context, policy

    async def agent_type(self, engine: Engine, event: ToolCall) -> str | None:
        if event.agent_id is None:
            return None
        for agent in await engine.agents.list():
            if agent.id == event.agent_id:
                return agent.type or agent.name or ""
        return ""

    async def protect(self, engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        """Protected paths and malformed input; registered fail-closed."""
        decision = self.decision(event)
        surface = decision.surface
        if surface.writes or surface.uncertain:
            paths = self.known_paths(engine, event, decision) or self.settle(
                engine, decision, await self.agent_type(engine, event)
            )
            context, policy, resolved = paths
            denial = protected_denial(surface, context, policy, resolved)
            if denial is not None:
                return ToolResult.denied(denial.reason, by=PLUGIN)
        result: ToolResult = await call_next(event)
        return result

    async def enforce(self, engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        """The agent's preset and the git gate; registered fail-open. One coroutine: the
        refusal is worked out inline, awaiting only a subagent's type and a held git call."""
        decision = self.decision(event)
        surface = decision.surface
        if surface.uncertain and surface.command is not None:
            engine.ui.log(f"could not fully analyse a Bash command: {surface.uncertain[0]}")
        if surface.writes:
            paths = self.known_paths(engine, event, decision) or self.settle(
                engine, decision, await self.agent_type(engine, event)
            )
            context, policy, resolved = paths
            denial = preset_denial(surface, context, policy, resolved)
            if denial is not None:
                return ToolResult.denied(denial.reason, by=PLUGIN)
            hold = git_hold(surface) if self.options.git_gate else None
            if hold is not None:
                refusal = await self.consume_or_refuse(engine, event, hold)
                if refusal is not None:
                    return refusal
        result: ToolResult = await call_next(event)
        return result

    async def consume_or_refuse(
        self, engine: Engine, event: ToolCall, hold: GitHold
    ) -> ToolResult | None:
        key = approval_key(hold.command)
        now = await engine.clock.now()
        stored = await engine.store.get(key)
        if stored is not None:
            claim = uuid.uuid4().hex
            after = await engine.store.update(
                key, consumer(hold.command, now, event.tool_use_id, claim)
            )
            if won(after, claim):
                engine.transcript.line(
                    f"write-guard: used the one-shot approval for {hold.operation}"
                )
                return None
            stored = after
        await engine.state.set(HELD_PREFIX + key, hold.command)
        reason = git_hold_denial(hold).reason
        if stored is not None:
            reason += f" (Not allowed now: {why_unusable(stored, now)}.)"
        return ToolResult.denied(reason, by=PLUGIN)

    async def learn(self, engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        """Record approvals from the person's AskUserQuestion answers, never from model text."""
        result: ToolResult = await call_next(event)
        if call_next.origin != ENGINE_ORIGIN or result.is_error or result.denial is not None:
            return result
        held_keys = await engine.state.keys(HELD_PREFIX)
        pending = [str(await engine.state.get(k)) for k in held_keys]
        commands = approved_commands(event.input, result.output, _gated, pending)
        if commands:
            now = await engine.clock.now()
            for command in commands:
                record = new_approval(command, now, "ask-user")
                await engine.store.set(approval_key(command), record.model_dump(), ttl=RECORD_TTL_S)
                await engine.state.delete(HELD_PREFIX + approval_key(command))
            engine.transcript.line(
                f"write-guard: {len(commands)} git command(s) approved once, for 5 minutes"
            )
        return result


def _home_relative(root: str, home: str) -> str:
    if root == "~" or root.startswith("~/"):
        return home + root[1:]
    return root


def _gated(command: str) -> bool:
    return git_hold(extract_surface("Bash", {"command": command})) is not None


@hookimpl
def register(on: Any, options: Options | None) -> None:
    guard = Guard(options if options is not None else Options())
    match = {"tool": is_write_tool}
    on("tool.call", guard.protect, match=match, order=-100, fail="closed")
    on("tool.call", guard.enforce, match=match, order=-90)
    on("tool.call", guard.learn, match={"tool": "AskUserQuestion"}, order=-90)
