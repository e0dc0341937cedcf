"""`Host`: loads plugins, opens the store, keeps sessions and runs each event's chain."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from framework.core.chain import END_OF_CHAIN, NO_ENGINE, RUNNING, Dispatch, Outcome, Run
from framework.core.contract import (
    ENGINE_ORIGIN,
    EVENT_TYPES,
    Classic,
    ContractError,
    Event,
    SessionEnd,
    SessionStart,
    is_valid_result,
    neutral_result,
)
from framework.core.dispatch import Action, current_dispatch
from framework.core.engine import (
    AgentInfo,
    Clock,
    Engine,
    SessionRuntime,
    SystemClock,
)
from framework.core.loading import (
    LoadedPlugin,
    discovered_candidates,
    explicit_candidates,
    load_plugins,
    make_plugin_manager,
)
from framework.core.names import table_plugin_name
from framework.core.registration import Registration
from framework.core.runner import ChainRunner
from framework.core.settings import HostSettings, data_dir, find_config, load_settings, read_config
from framework.stores.base import Store, StoreBackend
from framework.stores.factory import open_backend
from framework.stores.sqlite import SQLiteBackend

Terminal = Callable[[Any], Awaitable[Any]]
_log = structlog.get_logger("hookchain.host")
_plugin_log = structlog.get_logger("hookchain.plugin")


_BARE_RUN: Run = ((END_OF_CHAIN, NO_ENGINE),)
_run_level = Dispatch.__call__


_HAS_AGENT_FIELD: dict[type[Event], bool] = {}
"""Whether an event type has `agent_id`, by type: learnt at its first dispatch."""


async def _neutral_terminal(event: Event) -> Any:
    return neutral_result(event)


class Host:
    """A plugin host. Use as `async with Host(...) as host:`; one `PluginManager` per instance."""

    def __init__(
        self,
        *,
        plugins: Sequence[Any] | None = None,
        entry_points: bool = True,
        settings: HostSettings | None = None,
        store: str | StoreBackend | None = None,
        clock: Clock | None = None,
        env: Mapping[str, str] | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        config: Mapping[str, Any] | None = None,
        sandbox: Path | None = None,
    ) -> None:
        self.config_path = None if config is not None else find_config()
        self._config = dict(config) if config is not None else read_config(self.config_path)
        self.settings = settings if settings is not None else load_settings(self._config)
        self.clock: Clock = clock if clock is not None else SystemClock()
        # A snapshot: plugins see one consistent environment, and a plain dict answers a miss
        # without os.environ's KeyError round trip (engine.env.get is called per event).
        self.env: Mapping[str, str] = dict(env if env is not None else os.environ)
        self._store_spec = store if store is not None else self.settings.store
        self.sandbox = sandbox
        self._explicit = list(plugins or ())
        self._entry_points = entry_points
        self._options = options or {}
        self.pm = make_plugin_manager()
        self.plugins: list[LoadedPlugin] = []
        self.commands: dict[str, tuple[str, str]] = {}
        self.sessions: dict[str, SessionRuntime] = {}
        self._chains: dict[str, tuple[Registration, ...]] = {}
        self._runs: dict[Any, tuple[Registration, ...]] = {}
        self._runner = ChainRunner(
            default_budget=self.settings.handler_budget, valid=is_valid_result
        )
        self._backend: StoreBackend | None = None
        self._store: Store | None = None
        self._task_group: TaskGroup | None = None
        self._opened = False
        self._max_depth = self.settings.max_dispatch_depth

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Host:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Open the store and load the plugins (what `async with` does on entry)."""
        if self._opened:
            return
        spec = self._store_spec
        self._backend = open_backend(spec) if isinstance(spec, str) else spec
        # Only a store this host opened itself can be known to die with it; a backend object
        # handed in may serve another host after this one.
        owned = isinstance(spec, str) and getattr(self._backend, "process_local", False) is True
        self._store = Store(self._backend, process_local=owned)
        self.load()
        # A host may be opened again under another event loop: its watchdog timer died with the
        # old one, so the first dispatch here must arm a new one.
        self._runner.armed = False
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._opened = True

    async def aclose(self) -> None:
        """Wait for background work, then close the store."""
        if not self._opened:
            return
        self._opened = False
        self._runner.close()
        if self._task_group is not None:
            await self._task_group.__aexit__(None, None, None)
            self._task_group = None
        if self._backend is not None and isinstance(self._store_spec, str):
            await self._backend.aclose()

    def load(self) -> list[LoadedPlugin]:
        """Load every plugin on its own and build each event's chain once."""
        if self.plugins:
            return self.plugins
        candidates = explicit_candidates(self._explicit)
        if self._entry_points:
            explicit_names = {candidate.name for candidate in candidates}
            discovered = discovered_candidates(self.settings.plugins_dir)
            candidates += [c for c in discovered if c.name not in explicit_names]
        # A plugin's table in hookchain.toml may be spelled [my-plugin] or [my_plugin].
        options: dict[str, dict[str, Any]] = {}
        for name, table in self._config.items():
            if isinstance(table, dict) and name != "hookchain":
                options.setdefault(table_plugin_name(name), {}).update(table)
        for name, values in self._options.items():
            options.setdefault(name, {}).update(values)
        self.plugins = load_plugins(
            self.pm,
            candidates,
            only=self.settings.plugins,
            disabled=self.settings.disable_plugins,
            options=options,
            options_source=str(self.config_path or "hookchain.toml"),
        )
        by_event: dict[str, list[Registration]] = {}
        for record in self.plugins:
            for registration in record.registrations:
                by_event.setdefault(registration.event, []).append(registration)
        self._chains = {
            event: tuple(sorted(regs, key=lambda reg: reg.sort_key))
            for event, regs in by_event.items()
        }
        # What dispatch runs: each chain closed by END_OF_CHAIN, keyed by event class where the
        # class names the event (every event but classic.<Name>).
        self._runs = {}
        for event, regs in self._chains.items():
            kind = EVENT_TYPES.get(event)
            self._runs[kind if kind is not None and kind is not Classic else event] = (
                *regs,
                END_OF_CHAIN,
            )
        budgets = [self.settings.handler_budget] + [
            reg.budget for regs in self._chains.values() for reg in regs if reg.budget
        ]
        self._runner.tick = min(0.25, max(0.002, min(budgets) / 4))
        self._runner.know(reg for regs in self._chains.values() for reg in regs)
        return self.plugins

    # -- what plugins and tools see --------------------------------------------------------------

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("the host is not open; use `async with Host(...)`")
        return self._store

    def session_store(self, session_id: str) -> Store:
        """Per-session state: dropped at session.end, with a TTL as backstop."""
        return Store(
            self.store.backend,
            f"session:{session_id}:",
            ttl=self.settings.session_ttl,
            process_local=self.store.process_local,
        )

    @property
    def failures(self) -> Mapping[tuple[str, str], int]:
        """Handler failures counted per (plugin, event)."""
        return self._runner.failures

    def chain(self, event_name: str) -> tuple[Registration, ...]:
        """The registrations of an event, in chain order."""
        return self._chains.get(event_name, ())

    def chains(self) -> Mapping[str, tuple[Registration, ...]]:
        return dict(self._chains)

    def loaded(self) -> list[LoadedPlugin]:
        return [record for record in self.plugins if record.status == "loaded"]

    def take_pending(self, session_id: str) -> list[Action]:
        """Actions plugins took outside any dispatch (e.g. while a stream was read)."""
        runtime = self.sessions.get(session_id)
        if runtime is None or not runtime.pending:
            return []
        pending, runtime.pending = runtime.pending, []
        return pending

    def update_session(
        self,
        session_id: str,
        *,
        cwd: str | None = None,
        harness_version: str | None = None,
        model: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """What the harness says of a session on any event (its cwd changes; a host restarted
        mid-session never saw its session.start). Empty values leave the known ones; `env` adds
        variables this session's engines see over the host's (a replayed user's HOME)."""
        runtime = self._session(session_id)
        if env:
            runtime.env.update(env)
        if cwd:
            runtime.cwd = cwd
        if harness_version:
            runtime.harness_version = harness_version
        if model:
            runtime.model = model

    def owned_files(self) -> tuple[str, ...]:
        """Files and folders that are the host's own: its data dir, config file and store file.

        What a guard must never let the model write (the store holds, e.g., approvals)."""
        owned = [str(data_dir())]
        if self.config_path is not None:
            owned.append(str(self.config_path))
        if self.settings.plugins_dir is not None:
            # Its files run inside the host: a plugin written there would run before the guards.
            owned.append(str(self.settings.plugins_dir))
        if isinstance(self._backend, SQLiteBackend):
            path = str(self._backend.path)
            owned += [path, path + "-wal", path + "-shm"]
        return tuple(os.path.abspath(path) for path in owned)

    def note_agent(self, session_id: str, agent: AgentInfo) -> None:
        self._session(session_id).agents[agent.id] = agent

    def engine(self, plugin: str, session_id: str = "default") -> Engine:
        """The engine a plugin sees in a session (for tools and tests)."""
        return self._session(session_id).engines[plugin]

    # -- dispatch ----------------------------------------------------------------------------------

    def dispatch(
        self, event: Event, terminal: Terminal | None = None, *, origin: str = ENGINE_ORIGIN
    ) -> Awaitable[Outcome]:
        """Run the event's chain, ending in `terminal` (default: the neutral result).

        Await it: `outcome = await host.dispatch(event, terminal)`. `origin` is what handlers
        read as `call_next.origin`: the engine for the harness's own events; `engine.dispatch`
        passes the plugin's name.
        """
        if not self._opened:
            raise RuntimeError("the host is not open; use `async with Host(...)`")
        parent = current_dispatch.get()
        # A finished dispatch left in the context is none (`running_dispatch`): read inline here.
        depth = 0 if parent is None or parent._state != RUNNING else parent.depth + 1
        if depth >= self._max_depth:
            raise ContractError(
                f"plugin {origin!r} dispatched {event.name} {depth} levels deep; nested dispatches "
                f"stop at {self._max_depth} (HOOKCHAIN_MAX_DISPATCH_DEPTH): "
                "a handler is probably dispatching the event it handles"
            )
        runtime = self.sessions.get(event.session_id) or self._session(event.session_id)
        kind = type(event)
        if kind is SessionStart:
            runtime.started(event)  # type: ignore[arg-type]
        if origin == ENGINE_ORIGIN:
            # The harness says who it is on every event it sends (a plugin's own may not).
            runtime.harness = event.harness
        # Not getattr with a default: on a model without the field that raises and catches inside.
        has_agent = _HAS_AGENT_FIELD.get(kind)
        if has_agent is None:
            has_agent = _HAS_AGENT_FIELD[kind] = "agent_id" in kind.model_fields
        agent_id = event.agent_id if has_agent else None  # type: ignore[attr-defined]
        if agent_id is not None and agent_id not in runtime.agents:
            runtime.agents[agent_id] = AgentInfo(id=agent_id)
        runner = self._runner
        # Dispatch has no __init__: its fields are set right here, one Python call less on the
        # hottest path of the host (see benchmarks/dispatch.py).
        dispatch = Dispatch()
        dispatch._event = event
        dispatch._state = 0
        key = event.name if kind is Classic else kind
        dispatch._chain = runtime.runs.get(key) or self._bind(runtime, key)
        dispatch.runner = runner
        dispatch.source = origin
        dispatch.terminal = terminal or _neutral_terminal
        dispatch._actions = None
        dispatch.depth = depth
        dispatch.cancelling = None
        if not runner.armed:
            runner.arm()
        if kind is SessionEnd:
            return self._end_session(dispatch, runtime)
        # The root frame returns the outcome itself: no wrapper coroutine on the hot path, and
        # its level is called as the function it is (calling the instance costs a type lookup).
        outcome: Awaitable[Outcome] = _run_level(dispatch, event)
        return outcome

    async def _end_session(self, dispatch: Dispatch, runtime: SessionRuntime) -> Outcome:
        budget = self.settings.session_end_budget
        # One deadline for the handlers and for dropping the session's state: the harness gives
        # session.end one budget in all (Claude Code: 1.5 s).
        deadline = anyio.current_time() + budget
        with anyio.CancelScope(deadline=deadline) as scope:
            await dispatch(dispatch.event)
        if scope.cancelled_caught:
            dispatch.settle(None)  # session.end has no result to lose
            _log.warning("session.end handlers overran their shared budget", budget_s=budget)
        if dispatch.depth == 0:
            # What plugins did outside a dispatch and nobody collected goes with the last outcome.
            dispatch.actions.extend(runtime.pending)
            runtime.pending = []
            await self._close_session(runtime, deadline)
        return dispatch

    def _bind(self, runtime: SessionRuntime, key: Any) -> Run:
        """The chain for `key` as this session runs it: each handler with its engine, looked up
        once per session rather than at every level of every dispatch."""
        chain = self._runs.get(key)
        run = _BARE_RUN
        if chain is not None:
            run = (*((reg, runtime.engines[reg.plugin]) for reg in chain[:-1]), *_BARE_RUN)
        runtime.runs[key] = run
        return run

    def _session(self, session_id: str) -> SessionRuntime:
        runtime = self.sessions.get(session_id)
        if runtime is None:
            runtime = SessionRuntime(session_id)
            for record in self.plugins:
                if record.status == "loaded":
                    runtime.engines[record.name] = Engine(self, record.name, runtime)
            self.sessions[session_id] = runtime
        return runtime

    async def _close_session(self, runtime: SessionRuntime, deadline: float) -> None:
        self.sessions.pop(runtime.id, None)
        try:
            # A stalled store must not hold session.end past its budget: the TTL drops it later.
            with anyio.CancelScope(deadline=max(deadline, anyio.current_time() + 0.05)):
                await self.store.backend.clear(f"session:{runtime.id}:")
        except Exception as error:
            _log.warning("session state not dropped", error_type=type(error).__name__)

    # -- background work and plugin logs ------------------------------------------------

    def spawn_for_plugin(self, plugin: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        if self._task_group is None:
            raise RuntimeError("the host is not open; background work needs `async with Host(...)`")

        async def guarded() -> None:
            try:
                await fn(*args)
            except Exception as error:
                _log.warning(
                    "background work failed", plugin=plugin, error_type=type(error).__name__
                )

        self._task_group.start_soon(guarded)

    def log_for_plugin(self, plugin: str, level: str, text: str) -> None:
        method = getattr(_plugin_log, level, _plugin_log.debug)
        method(text, plugin=plugin)
