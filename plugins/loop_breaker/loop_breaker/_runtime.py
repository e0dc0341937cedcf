"""What one host keeps for loop-breaker: the config, the sessions' cores in memory with their
store copies, the counts not yet added to the store, failures logged, debug timings."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from framework import Engine, Event, Store

from ._options import IGNORE_ENTRY_MAX_COUNT, IGNORE_ENTRY_MAX_LENGTH, Options, core_config
from .core import CoreConfig, LoopBreakerCore
from .core.codec import dump, load
from .core.policy import Stats, merge_stats

PLUGIN_NAME = "loop-breaker"
STATE_KEY = "core"
STATS_KEY = "stats.v1"
IGNORE_KEY = "ignore.v1"
TIMING_EVERY = 100
MAX_HOT_SESSIONS = 256

T = TypeVar("T")


class Runtime:
    """What one host keeps for the plugin: config, failures already logged, debug timings."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.config: CoreConfig
        self.config, self.refused_ignores = core_config(options)
        self.logged: set[str] = set()
        self.hot: OrderedDict[str, HotCore] = OrderedDict()
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

    async def _load(self, engine: Engine, event: Event) -> HotCore:
        session_id = engine.session.id
        stored_ignores = ignore_list(await engine.store.get(IGNORE_KEY))
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
        hot = self.hot.setdefault(session_id, HotCore(core, event, engine.state))
        while len(self.hot) > MAX_HOT_SESSIONS:
            await self._drop(engine, *self.hot.popitem(last=False))
        return hot

    async def _drop(self, engine: Engine, session_id: str, hot: HotCore) -> None:
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

    async def _add_stats(self, engine: Engine, hot: HotCore) -> None:
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
class HotCore:
    """A session's core in memory, and the event it was loaded for until another one comes."""

    core: LoopBreakerCore
    loaded_for: Event | None
    state: Store
    """The session's `engine.state`, for writing the core when it leaves memory."""
    stored: dict[str, Any] | None = None
    """What `engine.state` holds, as last read or written here."""


def ignore_list(value: object) -> list[str]:
    """The store's ignore entries, whatever the store held: only sane strings count."""
    if not isinstance(value, list):
        return []
    entries = [
        entry
        for entry in value
        if isinstance(entry, str) and 0 < len(entry) <= IGNORE_ENTRY_MAX_LENGTH
    ]
    return entries[:IGNORE_ENTRY_MAX_COUNT]
