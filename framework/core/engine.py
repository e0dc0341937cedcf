"""The engine port a handler receives: clock, ui, transcript, store, state, env, session, agents."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from framework.core.dispatch import Action, running_dispatch
from framework.core.tools import CLAUDE_CODE
from framework.stores.base import Store

if TYPE_CHECKING:
    from framework.core.contract import Event, SessionStart


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """A subagent the session has seen."""

    id: str
    name: str | None = None
    type: str | None = None


class Clock(Protocol):
    """Time for handlers: fakeable in tests."""

    async def now(self) -> int:
        """Milliseconds since the epoch."""
        ...

    async def sleep(self, ms: float) -> None: ...


class SystemClock:
    """The real clock."""

    async def now(self) -> int:
        return int(time.time() * 1000)

    async def sleep(self, ms: float) -> None:
        await anyio.sleep(ms / 1000)


class FakeClock:
    """A clock that moves only when told: `advance(ms)`, `set(ms)`, `follow(ms)`; `stall()` makes
    `now` hang.

    `sleep(ms)` waits until the clock has been moved past it, or, with `instant_sleep=True` (the
    testing kit's engines, replays), moves the clock itself and returns at once, so that no test
    and no replay waits on a plugin's sleep.
    """

    def __init__(self, start_ms: int = 1_700_000_000_000, *, instant_sleep: bool = False) -> None:
        self.ms = start_ms
        self.instant_sleep = instant_sleep
        self._stalled = False
        # Made by the first sleeper that must wait, so moving a clock nobody waits on (a replay
        # follows every record's time) costs no event.
        self._moved: anyio.Event | None = None

    async def now(self) -> int:
        if self._stalled:
            await anyio.sleep_forever()
        return self.ms

    async def sleep(self, ms: float) -> None:
        if self.instant_sleep and not self._stalled:
            self.advance(max(0.0, ms))
            await anyio.lowlevel.checkpoint()
            return
        until = self.ms + ms
        while self.ms < until or self._stalled:
            if self._moved is None:
                self._moved = anyio.Event()
            await self._moved.wait()

    def advance(self, ms: float) -> None:
        self.set(int(self.ms + ms))

    def set(self, ms: int) -> None:
        self.ms = ms
        moved = self._moved
        if moved is not None:
            self._moved = None
            moved.set()

    def follow(self, at_ms: int) -> None:
        """Move to `at_ms` (a record's time) unless the clock is past it already: never backwards,
        since replayed sessions may overlap."""
        if at_ms > self.ms:
            self.set(at_ms)

    def stall(self, stalled: bool = True) -> None:
        """A clock that never answers, to check that handlers give up instead of hanging."""
        self._stalled = stalled
        if not stalled:
            self.set(self.ms)


def plugin_data_dir(
    plugin: str,
    *,
    sandbox: Path | None,
    cwd: str,
    configured: str | os.PathLike[str] | None = None,
) -> Path:
    """The one rule for where a plugin keeps its own files (`engine.data_dir`, host and fake).

    `configured` (relative to the session's workspace) or `<workspace>/.hookchain/<plugin>`; when
    the host runs in a sandbox (replays, tests) always `<sandbox>/<plugin>`, so that nothing is
    written where the recorded session worked.
    """
    if sandbox is not None:
        return sandbox / plugin
    workspace = Path(cwd or os.getcwd())
    if configured is None:
        return workspace / ".hookchain" / plugin
    chosen = Path(configured).expanduser()
    return chosen if chosen.is_absolute() else workspace / chosen


class HostPort(Protocol):
    """What an engine port needs of its host: a small internal interface `Host` provides, so the
    port depends on no concrete host (nor the host's private members)."""

    clock: Clock
    env: Mapping[str, str]
    sandbox: Path | None
    commands: dict[str, tuple[str, str]]

    @property
    def store(self) -> Store: ...

    def session_store(self, session_id: str) -> Store: ...

    def dispatch(
        self, event: Event, terminal: Callable[[Any], Awaitable[Any]] | None = None, *, origin: str
    ) -> Awaitable[Any]: ...

    def owned_files(self) -> tuple[str, ...]: ...

    def spawn_for_plugin(
        self, plugin: str, fn: Callable[..., Awaitable[Any]], *args: Any
    ) -> None: ...

    def log_for_plugin(self, plugin: str, level: str, text: str) -> None: ...


class SessionRuntime:
    """Everything the host keeps for one live session."""

    __slots__ = (
        "agents",
        "cwd",
        "engines",
        "env",
        "harness",
        "harness_version",
        "id",
        "model",
        "pending",
        "runs",
    )

    def __init__(self, session_id: str) -> None:
        self.id = session_id
        self.cwd = ""
        self.harness = CLAUDE_CODE
        self.harness_version: str | None = None
        self.model: str | None = None
        self.engines: dict[str, Engine] = {}
        self.pending: list[Action] = []
        self.agents: dict[str, AgentInfo] = {}
        self.env: dict[str, str] = {}
        # The host's chains bound to this session's engines (`Host._bind`), by event key.
        self.runs: dict[Any, Any] = {}

    def started(self, event: SessionStart) -> None:
        self.cwd = event.cwd or self.cwd
        self.harness_version = event.harness_version
        self.model = event.model


def record(runtime: SessionRuntime, action: Action) -> None:
    """Record an action in the running dispatch's audit, or the session's pending list."""
    dispatch = running_dispatch()
    if dispatch is not None:
        dispatch.actions.append(action)
    else:
        runtime.pending.append(action)


def _event_name() -> str:
    dispatch = running_dispatch()
    return "" if dispatch is None else str(dispatch.event_name)


class Ui:
    """What the person sees: toasts, the status line, and the debug log."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def toast(self, text: str, *, timeout_ms: int | None = None) -> None:
        """A short message for the person, shown for `timeout_ms` (None: the harness's default)."""
        if timeout_ms is not None and (
            not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool) or timeout_ms <= 0
        ):
            raise ValueError(
                f"plugin {self._engine.plugin!r}: toast timeout_ms must be a positive int of "
                f"milliseconds or None, not {timeout_ms!r}"
            )
        self._engine._emit("toast", text, timeout_ms)

    def status(self, text: str) -> None:
        self._engine._emit("status", text)

    def log(self, text: str, *, level: str = "debug") -> None:
        self._engine._host.log_for_plugin(self._engine.plugin, level, text)


class Transcript:
    """Lines in the person's transcript; never sent to the model."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def line(self, text: str) -> None:
        self._engine._emit("transcript", text)


class Env:
    """Read-only environment variables: the session's own (e.g. a replayed user's HOME) first."""

    __slots__ = ("_session", "_values")

    def __init__(self, values: Mapping[str, str], session: Mapping[str, str]) -> None:
        self._values = values
        self._session = session

    def get(self, name: str, default: str | None = None) -> str | None:
        if name in self._session:
            return self._session[name]
        return self._values.get(name, default)


class Session:
    """The session a handler runs in."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def id(self) -> str:
        return self._engine._runtime.id

    @property
    def cwd(self) -> str:
        return self._engine._runtime.cwd

    @property
    def harness(self) -> str:
        """The harness the session runs in (1.1): `claude-code`, `codex`, `gemini`, …"""
        return self._engine._runtime.harness

    @property
    def harness_version(self) -> str | None:
        return self._engine._runtime.harness_version

    @property
    def model(self) -> str | None:
        return self._engine._runtime.model

    async def append(self, text: str) -> None:
        """Add a message for the model to the conversation."""
        self._engine._emit("append", text)


class Agents:
    """The subagents this session has seen."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def list(self) -> list[AgentInfo]:
        return list(self._engine._runtime.agents.values())


class Commands:
    """Slash commands a plugin answers through `command.run`."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def register(self, name: str, description: str) -> None:
        self._engine._host.commands[name] = (self._engine.plugin, description)


class Engine:
    """The port between a plugin and the host, one per (session, plugin)."""

    __slots__ = (
        "_host",
        "_runtime",
        "agents",
        "clock",
        "commands",
        "env",
        "plugin",
        "session",
        "state",
        "store",
        "transcript",
        "ui",
    )

    def __init__(self, host: HostPort, plugin: str, runtime: SessionRuntime) -> None:
        self.plugin = plugin
        self._host = host
        self._runtime = runtime
        self.clock: Clock = host.clock
        self.ui = Ui(self)
        self.transcript = Transcript(self)
        self.store: Store = host.store.namespace(plugin)
        self.state: Store = host.session_store(runtime.id).namespace(plugin)
        self.env = Env(host.env, runtime.env)
        self.session = Session(self)
        self.agents = Agents(self)
        self.commands = Commands(self)

    def _emit(self, kind: str, text: str, timeout_ms: int | None = None) -> None:
        action = Action(
            by=self.plugin, kind=kind, text=text, event=_event_name(), timeout_ms=timeout_ms
        )
        record(self._runtime, action)

    async def dispatch(
        self, event: Event, terminal: Callable[[Any], Awaitable[Any]] | None = None
    ) -> Any:
        """Dispatch a plugin-originated event; handlers see `call_next.origin == self.plugin`."""
        outcome = await self._host.dispatch(event, terminal, origin=self.plugin)
        return outcome.result

    @property
    def host_files(self) -> tuple[str, ...]:
        """Absolute paths the host owns (data dir, config file, store file): never the model's."""
        return self._host.owned_files()

    @property
    def sandboxed(self) -> bool:
        """Whether the host runs in a sandbox (replays, tests): plugin files are throwaway."""
        return self._host.sandbox is not None

    def data_dir(self, configured: str | os.PathLike[str] | None = None) -> Path:
        """The folder for this plugin's own files (not created here): see `plugin_data_dir`."""
        return plugin_data_dir(
            self.plugin, sandbox=self._host.sandbox, cwd=self._runtime.cwd, configured=configured
        )

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run background work the host owns: awaited when the host closes, failures logged."""
        self._host.spawn_for_plugin(self.plugin, fn, *args)
