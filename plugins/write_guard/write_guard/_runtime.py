"""write-guard's per-host books: options, built policies, the sandbox probe, the decisions two
handlers share, held git calls and their approvals; and the handlers that read and write them."""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
import threading
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any

import anyio
from framework import (
    ENGINE_ORIGIN,
    CallNext,
    Engine,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
    data_dir,
)

from write_guard import _control
from write_guard._approvals import (
    CODE_TTL_S,
    approval_key,
    approved_commands,
    code_key,
    consumer,
    new_approval,
    new_code,
    why_unusable,
    won,
)
from write_guard._bash import analyse_bash
from write_guard._claude_sandbox import (
    OFF,
    SESSIONS,
    ClaudeSettings,
    LaunchCache,
    SettingsCache,
    expected_settings,
    settings_files,
    user_folder,
    user_settings,
)
from write_guard._control import ControlDenial, control_denial, control_reason
from write_guard._decide import (
    GitHold,
    Resolved,
    Verdicts,
    git_hold,
    git_hold_denial,
    preset_denial,
    protected_denial,
    resolve_all,
    verdicts_for,
)
from write_guard._fallback import (
    NO_SANDBOX,
    fallback_doubt,
    fallback_reason,
    git_outside,
    written_through_links,
)
from write_guard._options import Options
from write_guard._paths import PathContext, PathRejection
from write_guard._policy import BUILTIN_PROTECTED_PATTERNS, Policy, prepare_patterns
from write_guard._quick import writes_nothing
from write_guard._routes import (
    SETTINGS_HARNESS,
    Facts,
    Route,
    checks_reason,
    checks_warning,
    left,
    permission_checks,
    session_warning,
)
from write_guard._sandbox import (
    Availability,
    SandboxPlan,
    plan_sandbox,
    probe,
    remove_session_temp,
    session_temp,
    wrap_command,
)
from write_guard._snapshot import record, writes_no_file
from write_guard._surface import (
    CLAUDE_TOOL_NAMES,
    MCP_PREFIX,
    SURFACE_KEPT_CHARS,
    SURFACES_KEPT,
    Surface,
    extract_surface,
    neutral_surface,
)

PLUGIN = "write-guard"
SHELL_TOOLS = frozenset({"bash",  # Claude Code, the Agent SDK, Codex's hooks
                         "exec_command", "shell", "local_shell",  # Codex's model
                         "run_shell_command"})  # Gemini CLI  # fmt: skip
WRITE_TOOLS = SHELL_TOOLS | frozenset({"write", "edit", "multiedit", "notebookedit", "apply_patch",
                                       "applypatch", "patch",
                                       "write_file", "replace"})  # Gemini CLI  # fmt: skip
HELD_PREFIX = "held:"
RECORD_TTL_S = 24 * 3600.0
DECISIONS_KEPT = 8
BUILT_KEPT = 64
# Well inside the handler's default budget (2 s), which a huge work tree could otherwise use up.
SNAPSHOT_BUDGET_S = 1.0
CHECKS_WARNED = "warned:permission-checks"
"""Session state: the person was told that permission checks leave shell writes unenforced."""


def runtime_dir(environ: os._Environ[str] | dict[str, str] = os.environ) -> str:
    """The host's runtime folder (socket, lock, log), by the rule the hook client uses."""
    chosen = environ.get("HOOKCHAIN_RUNTIME_DIR")
    if chosen:
        return chosen
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return xdg + "/hookchain"
    return f"/tmp/hookchain-{os.getuid()}"


@dataclass(slots=True)
class _Decision:
    """What both handlers of one tool call work out alike: surface, context, policy, paths."""

    event: ToolCall
    surface: Surface
    paths: tuple[PathContext, Policy, Resolved] | None = None
    checked: bool = False
    """The fail-closed checks passed (and the snapshot was taken) for this event."""
    route: Route = "none"
    """How the OS confines this call's shell command (set by the fail-closed checks)."""
    verdicts: Verdicts | None = None
    """The policy's kept verdicts per resolved path (set with `paths`)."""


def is_write_tool(tool: str) -> bool:
    folded = tool.casefold()
    return folded in WRITE_TOOLS or folded.startswith(MCP_PREFIX)


def is_shell_tool(tool: str) -> bool:
    return tool.casefold() in SHELL_TOOLS


@functools.lru_cache(maxsize=SURFACES_KEPT)
def _kept_control(
    command: str, programs: tuple[tuple[str, ...], ...], host_pid: int, host: tuple[str, ...]
) -> ControlDenial | None:
    return control_denial(command, programs, (host_pid,), host)


def kept_control(
    command: str,
    programs: tuple[tuple[str, ...], ...],
    host_pid: int,
    host: tuple[str, ...] = (),
) -> ControlDenial | None:
    """`control_denial` of one line for one host: a pure function of the text, the programs
    read from it and the host's pid and identity, so a line seen before reuses its verdict
    (bounded as the kept surfaces are; a longer line is read every time)."""
    if len(command) <= SURFACE_KEPT_CHARS:
        return _kept_control(command, programs, host_pid, host)
    return control_denial(command, programs, (host_pid,), host)


@functools.lru_cache(maxsize=SURFACES_KEPT)
def _reads_everything(command: str) -> bool:
    return fallback_doubt(analyse_bash(command).programs, command) is None


def changes_nothing(command: str, programs: tuple[tuple[str, ...], ...]) -> bool:
    """Whether a line may go without a snapshot of the work tree: it writes nothing the
    analysis sees, and it runs only what the analysis reads (a program it does not know, such
    as `make clean` or `uniq /dev/null notes.txt`, may destroy work; see `_fallback`)."""
    if not writes_nothing(command):
        return False
    if programs:
        return fallback_doubt(programs, command) is None
    if len(command) <= SURFACE_KEPT_CHARS:
        return _reads_everything(command)
    return fallback_doubt(analyse_bash(command).programs, command) is None


def gated(command: str) -> bool:
    return git_hold(extract_surface("Bash", {"command": command})) is not None


class Guard:
    """Per-host state: options, the setup directory and the one-time cwd warning."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.mcp = options.mcp_paths()
        self.setup_dir = os.getcwd()
        self.cwd_warned = False
        # The host's own files (its store holds the approvals), learnt from the first event.
        self.host_paths: tuple[str, ...] | None = None
        self.default_home = os.path.expanduser("~")
        self.runtime_dir = runtime_dir()
        self.host_pid = os.getpid()
        # What a process pattern (pkill -f, killall) can match of this host.
        self.host_identity = _control.host_identity()
        self._sandbox: Availability | None = None
        # The probe runs a process (~5 ms, far more on a loaded machine): started now, beside
        # the host's loading, rather than inside the first session's start.
        self._probing: threading.Thread | None = None
        if options.sandbox != "off":
            self._probing = threading.Thread(target=self._probe, name="write-guard-probe")
            self._probing.daemon = True
            self._probing.start()
        # The trees of the last snapshot per work tree: an unchanged state is not recorded again.
        self.snapshotted: dict[str, str] = {}
        self.retention = options.retention()
        # The host's temp folder of each session given a temp folder of its own (removed at
        # its end).
        self.temps: dict[str, str] = {}
        # The fail-closed and the fail-open handler see the same call back to back; each works
        # it out once. Keyed by the event object itself, so a handler in between that replaces
        # the event gets a fresh decision.
        self.decisions: deque[_Decision] = deque(maxlen=DECISIONS_KEPT)
        # Context and policy depend only on these inputs and the options, fixed per host.
        self.built: dict[
            tuple[str, str | None, str | None, str | None, str | None],
            tuple[PathContext, Policy, Verdicts],
        ] = {}
        # Per (workspace, HOME, CLAUDE_CONFIG_DIR, launch): its Claude Code sandbox settings
        # against the policy; per session, what Claude Code's command line adds.
        self.claude = SettingsCache(BUILT_KEPT)
        self.launches = LaunchCache(BUILT_KEPT)
        # (session, why) Claude Code's sandbox is not the route, as the person was told.
        self.route_said: set[tuple[str, str]] = set()
        # Without protected globs in the options, every policy uses the built-in patterns.
        prepare_patterns(BUILTIN_PROTECTED_PATTERNS)

    def _probe(self) -> None:
        self._sandbox = probe(self.options.sandbox)

    @property
    def sandbox(self) -> Availability:
        """Whether shell commands run in bubblewrap here (probed once per host, ~5 ms, in the
        background from the host's start)."""
        if self._sandbox is None:
            probing = self._probing
            if probing is not None:
                probing.join()
            if self._sandbox is None:  # switched off, or the probe's thread failed
                self._sandbox = probe(self.options.sandbox)
        return self._sandbox

    def shell_route(
        self, engine: Engine, event: ToolCall, policy: Policy
    ) -> tuple[Route, bool, str | None]:
        """How the OS confines this call's shell command, and whether permission checks are
        what keeps the rewrite from holding. `claude-sandbox` only where the workspace's Claude
        Code settings confine as the policy does (a person's narrower `denyWrite` or wider
        `allowWrite` would be neither enforced nor analysed). `none` where they switch its
        sandbox on but looser (the wrapper cannot run inside it); for a harness that does not
        run a rewritten tool input (Gemini CLI drops `updatedInput`; Codex's handling of it is
        unproven), where the wrapper would be dropped without a word; and under Claude Code's
        permission checks without its sandbox, where the rewritten command would be checked
        against the person's rules instead of theirs. The line analysis then decides, failing
        closed. Third: why Claude Code's sandbox, on, is not the route, or why the permission
        checks leave the line analysis to decide (None: it is the route, or off)."""
        if event.harness not in CLAUDE_TOOL_NAMES:
            return "none", False, None
        # A replay or a test host runs nothing: the recorded workspace's files are not read.
        # Claude Code's sandbox is built from the main agent's policy (`project_policy`): a
        # subagent of another preset (a read-only reviewer) would write where its own may not.
        # Same options otherwise, so the same preset is the same roots.
        ours = policy.preset == self.options.preset
        if not engine.sandboxed and event.harness == SETTINGS_HARNESS:
            claude = self.claude_settings(engine, self.settings_folder(engine))
            if claude.holds and ours:
                return "claude-sandbox", False, None
            # Switched on but looser than the policy: the wrapper cannot run inside it (see
            # _routes.route_at_rest).
            if claude.on:
                if claude.holds or claude.mismatch is None:
                    why = (
                        f"Claude Code's sandbox is built for the main agent's {self.options.preset}"
                        f" preset, not this subagent's {policy.preset}"
                    )
                else:
                    why = left(claude.mismatch)
                self.say_route(engine, why)
                return "none", False, why
        if self.sandbox.bwrap is None:
            return "none", False, None
        # A replay reads no workspace's settings (above): it takes the set-up `hookchain
        # install` makes, whose Claude Code sandbox confines in every permission mode, as the
        # recorded mode (carried since Claude Code 1.0.119) cannot say whether it was in place.
        if permission_checks(event.permission_mode) and not engine.sandboxed:
            return "none", True, checks_reason(event.permission_mode)
        return "bwrap-rewrite", False, None

    def say_route(self, engine: Engine, why: str) -> None:
        """Tell the person once per session and difference why Claude Code's sandbox is not
        the route: the settings, the policy or the workspace (a nested repository is a path
        to protect) can change after the session start said how things stood."""
        said = (engine.session.id, why)
        if said in self.route_said:
            return
        if len(self.route_said) >= BUILT_KEPT:
            self.route_said.clear()
        self.route_said.add(said)
        engine.ui.toast(f"write-guard: {why}.")

    def settings_folder(self, engine: Engine, cwd: str | None = None) -> str:
        """Where Claude Code reads the project's and local settings from: its project folder
        (its original cwd), not the policy's root (`workspace_root` may be a folder above)."""
        return engine.env.get("CLAUDE_PROJECT_DIR") or cwd or self.session_cwd(engine)

    def claude_settings(
        self, engine: Engine, workspace: str, at_start: bool = False
    ) -> ClaudeSettings:
        """The workspace's Claude Code sandbox settings, with what the session's Claude Code
        command line adds, against the policy; compared again when a settings file changes
        or a Claude Code process starts or ends. `at_start`: Claude Code may not have said
        yet which process is the session's (each command checks). A replay or a test host
        runs nothing: the recorded workspace's files are not read."""
        if engine.sandboxed or not workspace:
            return OFF
        env = engine.env
        home, config_dir = env.get("HOME"), env.get("CLAUDE_CONFIG_DIR")
        user_home = home or self.default_home
        folder = os.path.join(user_folder(user_home, config_dir, workspace), SESSIONS)
        launch = self.launches.get(folder, engine.session.id, workspace, at_start)
        return self.claude.get(
            (workspace, home, config_dir, launch),
            settings_files(workspace, user_home, config_dir, launch.settings),
            lambda: self.claude_expected(workspace, home, config_dir),
            workspace,
            user_home,
            launch,
        )

    def claude_expected(
        self, workspace: str, home: str | None, config_dir: str | None = None
    ) -> dict[str, Any]:
        """The `sandbox` value of the workspace's Claude Code settings that the route requires,
        `hookchain install` and `hookchain sandbox-settings` write and `hookchain status`
        compares (all through here): `expected_settings` of the main agent's policy there,
        hiding hookchain's runtime and data dirs (which hold the host's own files)."""
        hidden = (self.runtime_dir, str(data_dir()))
        policy = self.project_policy(workspace, home, config_dir)
        user = user_settings(home or self.default_home, config_dir, workspace)
        return expected_settings(policy, hidden, (user,))

    def project_policy(
        self, workspace: str, home: str | None, config_dir: str | None = None
    ) -> Policy:
        """The main agent's policy in a workspace as `hookchain install` and `hookchain status`
        see it (no host's files yet: install hides their folders whole)."""
        _context, policy = self._build(workspace, workspace, home, None, (), config_dir)
        return policy

    def decision(self, event: ToolCall) -> _Decision:
        # Newest first: the other handler of the same call asks right after the first one.
        for known in reversed(self.decisions):
            if known.event is event:
                return known
        if event.harness in CLAUDE_TOOL_NAMES:
            surface = extract_surface(event.tool, event.input, self.mcp)
        else:
            action = event.action
            surface = neutral_surface(
                event.tool, event.input, action.kind, action.command, action.writes, self.mcp
            )
        made = _Decision(event, surface)
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

    async def paths(
        self, engine: Engine, event: ToolCall, decision: _Decision
    ) -> tuple[PathContext, Policy, Resolved]:
        return self.known_paths(engine, event, decision) or self.settle(
            engine, decision, await self.agent_type(engine, event)
        )

    def settle(
        self, engine: Engine, decision: _Decision, agent_type: str | None
    ) -> tuple[PathContext, Policy, Resolved]:
        """The decision's context, policy and resolved targets, worked out once for both
        handlers. Synchronous: the only await it needs, the subagent's type, is left to the
        caller, so a main-loop call costs no coroutine here."""
        paths = decision.paths
        if paths is None:
            if self.host_paths is None:
                self.host_paths = (*engine.host_files, self.runtime_dir)
            env = engine.env
            context, policy, decision.verdicts = self.built_for(
                self.session_cwd(engine),
                env.get("CLAUDE_PROJECT_DIR"),
                env.get("HOME"),
                agent_type,
                env.get("CLAUDE_CONFIG_DIR"),
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

    def built_for(
        self,
        cwd: str,
        project: str | None,
        home: str | None,
        agent_type: str | None,
        config_dir: str | None = None,
    ) -> tuple[PathContext, Policy, Verdicts]:
        """`build`, and the policy's kept verdicts."""
        key = (cwd, project, home, agent_type, config_dir)
        built = self.built.get(key)
        if built is None:
            if len(self.built) >= BUILT_KEPT:
                self.built.clear()
            host_paths = self.host_paths or ()
            context, policy = self._build(cwd, project, home, agent_type, host_paths, config_dir)
            built = self.built[key] = (context, policy, verdicts_for(policy))
        return built

    def _build(
        self,
        cwd: str,
        project: str | None,
        home: str | None,
        agent_type: str | None,
        host_paths: tuple[str, ...],
        config_dir: str | None = None,
    ) -> tuple[PathContext, Policy]:
        """The path context and policy for one event (pure apart from the options);
        `config_dir`: Claude Code's `CLAUDE_CONFIG_DIR`, whose settings file is protected."""
        options = self.options
        root = options.workspace_root or project or cwd
        context = PathContext(
            cwd=cwd,
            home=home or self.default_home,
            project_dir=project or None,
            case_insensitive=options.case_insensitive,
        )
        patterns = list(BUILTIN_PROTECTED_PATTERNS)
        # The user's Claude Code settings: `*/.claude/settings*.json` misses a config dir of
        # another name, and they widen the project's sandbox as its own settings do.
        protected = [*host_paths, user_settings(context.home, config_dir, project or cwd)]
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

    def plan(
        self, policy: Policy, bwrap: str, session_id: str = "", host_temp: str | None = None
    ) -> SandboxPlan:
        """The sandbox of a policy: its roots writable (none for read-only), the rest of the
        filesystem read-only, the host's own folders hidden; where the host's temp folder is
        a root, the session's own private one in its place."""
        roots: tuple[str, ...] = ()
        if policy.preset != "read-only":
            roots = (policy.workspace_root, *policy.extra_roots)
        hidden = (self.runtime_dir, *(self.host_paths or ()))
        temp = None
        host_temp = host_temp or tempfile.gettempdir()
        real_temp = os.path.realpath(host_temp)
        if session_id and any(os.path.realpath(root) == real_temp for root in roots):
            temp = (session_temp(real_temp, session_id), real_temp)
            self.temps[session_id] = real_temp
        return plan_sandbox(bwrap, roots, policy.protected_paths, hidden, temp)

    async def ended(self, engine: Engine, event: SessionEnd, call_next: CallNext) -> Any:
        """The session's temp folder goes with it."""
        host_temp = self.temps.pop(engine.session.id, None)
        if host_temp is not None:
            await anyio.to_thread.run_sync(remove_session_temp, host_temp, engine.session.id)
        return await call_next(event)

    async def agent_type(self, engine: Engine, event: ToolCall) -> str | None:
        if event.agent_id is None:
            return None
        for agent in await engine.agents.list():
            if agent.id == event.agent_id:
                return agent.type or agent.name or ""
        return ""

    async def protect(self, engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        """Protected paths, malformed input, the control plane, and without a sandbox the
        lines the analysis cannot read; registered fail-closed (an error here refuses the call
        rather than let it run)."""
        decision = self.decision(event)
        refusal = await self.refusal(engine, event, decision)
        if refusal is not None:
            return refusal
        result: ToolResult = await call_next(event)
        return result

    async def refusal(
        self, engine: Engine, event: ToolCall, decision: _Decision
    ) -> ToolResult | None:
        """The fail-closed checks of one call (once per decision), and the snapshot of the work
        tree before a shell command that passes them."""
        if decision.checked:
            return None
        surface = decision.surface
        command = surface.command
        if not (surface.writes or surface.uncertain or command is not None):
            decision.checked = True
            return None
        context, policy, resolved = await self.paths(engine, event, decision)
        if command is not None:
            control = kept_control(command, surface.programs, self.host_pid, self.host_identity)
            if control is not None:
                return ToolResult.denied(control_reason(control), by=PLUGIN)
        route: Route = "none"
        why: str | None = None
        if command is not None:
            route, checked, why = self.shell_route(engine, event, policy)
            decision.route = route
            if checked:
                await self.warn_checks(engine, event)
        denial = protected_denial(
            surface, context, policy, resolved, strict=route == "none", verdicts=decision.verdicts
        )
        if denial is not None:
            return ToolResult.denied(denial.reason, by=PLUGIN)
        if command is not None and route == "none":
            unread = self.unenforced(
                command, surface, resolved, why or NO_SANDBOX, (context, policy)
            )
            if unread is not None:
                return ToolResult.denied(unread, by=PLUGIN)
        # A replay or a test host runs nothing it is handed, and must never touch the folders a
        # recorded session worked in (a snapshot writes a ref there).
        snapshots = self.options.snapshots and not engine.sandboxed
        # No snapshot only where both agree the line changes nothing: every program a known
        # reader (`writes_no_file`), and every program one the analysis reads (`changes_nothing`).
        if (
            command is not None
            and snapshots
            and not (writes_no_file(command) and changes_nothing(command, surface.programs))
        ):
            await self.snapshot(engine, context.cwd, command)
        decision.checked = True
        return None

    async def confine(self, engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        """The shell sandbox, last before the harness runs the call, so that every other
        plugin sees the command as the model wrote it; fail-closed. A call changed on the way
        (a new event) is checked again before it is wrapped."""
        decision = self.decision(event)
        refusal = await self.refusal(engine, event, decision)
        if refusal is not None:
            return refusal
        command = decision.surface.command
        sandbox = self.sandbox.bwrap
        # Under Claude Code's own sandbox (`claude-sandbox`), it runs the command there, built
        # from this policy, after checking its permission rules on the command as written (see
        # _claude_sandbox); it ignores a `dangerouslyDisableSandbox` there. On the rewrite
        # route the wrapper confines the command whatever that field says, so it is never a
        # reason to deny. A replay or a test host runs nothing it is handed: building the
        # mounts (a realpath walk and git lookups per command) would only cost time, and the
        # decisions before this point are the same as live.
        if (
            command is None
            or sandbox is None
            or decision.route != "bwrap-rewrite"
            or engine.sandboxed
        ):
            result: ToolResult = await call_next(event)
            return result
        _context, policy, _resolved = await self.paths(engine, event, decision)
        wrapped = dict(event.input)
        plan = self.plan(policy, sandbox, engine.session.id, engine.env.get("TMPDIR"))
        wrapped["command"] = wrap_command(command, plan)
        result = await call_next(event.model_copy(update={"input": wrapped}))
        return result.model_copy(update={"updated_input": wrapped})

    @staticmethod
    def unenforced(
        command: str,
        surface: Surface,
        resolved: Resolved,
        why: str = NO_SANDBOX,
        paths: tuple[PathContext, Policy] | None = None,
    ) -> str | None:
        """Without the sandbox (`why` not): the refusal of a line the analysis cannot read
        fully. `paths`: the context and policy the folders git works in are judged by."""
        for _target, path in resolved:
            if isinstance(path, PathRejection):
                return fallback_reason(f"a path known only when it runs: {path.raw}", why)
        if paths is not None:
            outside = git_outside(surface.git_dirs, *paths) if surface.git_dirs else None
            outside = outside or written_through_links(surface, resolved, *paths)
            if outside is not None:
                return fallback_reason(outside, why)
        if surface.uncertain:
            return fallback_reason(surface.uncertain[0], why)
        # The shortcut proves only that no analysed program runs: here every one counts.
        programs = surface.programs or analyse_bash(command).programs
        targets = [target.path for target in surface.targets]
        doubt = fallback_doubt(programs, command, targets)
        return fallback_reason(doubt, why) if doubt is not None else None

    async def snapshot(self, engine: Engine, cwd: str, command: str) -> None:
        """Record the work tree's changes, within a bound: this handler fails closed, and a
        snapshot that overran its budget would refuse the command instead of recording it."""
        snap = None
        try:
            with anyio.move_on_after(SNAPSHOT_BUDGET_S) as scope:
                snap = await anyio.to_thread.run_sync(
                    record, cwd, command, self.snapshotted, self.retention, abandon_on_cancel=True
                )
        except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as error:
            engine.ui.log(f"no snapshot of the work tree: {type(error).__name__}", level="warning")
            return
        if scope.cancelled_caught:
            engine.ui.log("no snapshot of the work tree: git took too long", level="warning")
        if snap is not None and snap.unstored:
            engine.ui.log(
                f"recorded the work tree's changes as {snap.ref}, kept in the repository only "
                f"(not in write-guard's store: {snap.unstored})",
                level="warning",
            )
        elif snap is not None:
            engine.ui.log(f"recorded the work tree's changes as {snap.ref}")

    async def enforce(self, engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        """The agent's preset and the git gate; registered fail-open. One coroutine: the
        refusal is worked out inline, awaiting only a subagent's type and a held git call."""
        decision = self.decision(event)
        surface = decision.surface
        if surface.uncertain and surface.command is not None:
            engine.ui.log(f"could not fully analyse a Bash command: {surface.uncertain[0]}")
        if surface.writes:
            context, policy, resolved = await self.paths(engine, event, decision)
            denial = preset_denial(surface, context, policy, resolved, decision.verdicts)
            if denial is not None:
                return ToolResult.denied(denial.reason, by=PLUGIN)
            cwd = context.cwd
            hold = (
                git_hold(surface, lambda name: os.path.lexists(os.path.join(cwd, name)))
                if self.options.git_gate
                else None
            )
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
        if not engine.sandboxed:
            # The person alone sees the code (a toast is a message for the person, never for
            # the model): `hookchain approve CODE` proves the approval is theirs. A sandboxed
            # host (a replay) has a throwaway store no one could approve in.
            code = new_code()
            await engine.store.set(code_key(code), {"command": hold.command}, ttl=CODE_TTL_S)
            engine.ui.toast(
                f"write-guard held `{hold.command}` ({hold.operation}). To allow it once, "
                "choose the approving answer when asked, or run in your own terminal: "
                f"hookchain approve {code}"
            )
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
        commands = approved_commands(event.input, result.output, gated, pending)
        if commands:
            now = await engine.clock.now()
            for command in commands:
                approval = new_approval(command, now, "ask-user")
                await engine.store.set(
                    approval_key(command), approval.model_dump(), ttl=RECORD_TTL_S
                )
                await engine.state.delete(HELD_PREFIX + approval_key(command))
            engine.transcript.line(
                f"write-guard: {len(commands)} git command(s) approved once, for 5 minutes"
            )
        return result

    async def warn_checks(self, engine: Engine, event: ToolCall) -> None:
        """Tell the person once per session that permission checks keep the rewrite route
        from holding, so shell writes fall back to the line analysis."""
        if await engine.state.get(CHECKS_WARNED) is None:
            await engine.state.set(CHECKS_WARNED, True)
            engine.ui.toast(checks_warning(event.permission_mode or "unknown"))

    async def started(self, engine: Engine, event: SessionStart, call_next: CallNext) -> Any:
        """Tell the person at the start of a session when shell writes are not, or not in
        every permission mode, enforced by the OS (under a sandbox a refused write reads
        'Read-only file system' by itself)."""
        result = await call_next(event)
        claude_like = event.harness in CLAUDE_TOOL_NAMES
        workspace = self.settings_folder(engine, event.cwd)
        available = self.sandbox
        ours = event.harness == SETTINGS_HARNESS
        claude = self.claude_settings(engine, workspace, at_start=True) if ours else OFF
        facts = Facts(
            claude=claude, bwrap_reason=available.reason, bwrap_works=available.bwrap is not None
        )
        warning = session_warning(facts, event.harness, claude_like)
        # A replay decides as under the installed set-up in every mode (see shell_route): only
        # a missing sandbox is news.
        if engine.sandboxed and claude_like and facts.bwrap_works:
            warning = None
        if warning is not None:
            engine.ui.toast(warning)
            if claude.on and not claude.holds and claude.mismatch is not None:
                self.route_said.add((engine.session.id, left(claude.mismatch)))
        return result


def _home_relative(root: str, home: str) -> str:
    if root == "~" or root.startswith("~/"):
        return home + root[1:]
    return root
