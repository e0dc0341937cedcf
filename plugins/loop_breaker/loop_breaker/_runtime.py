"""What one host keeps for loop-breaker: the config, the sessions' cores in memory (a
`SessionCache`), the counts not yet added to the store, failures logged, debug timings."""

from __future__ import annotations

from framework import Engine, EnginePort, Event, SessionCache

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


class Runtime:
    """What one host keeps for the plugin: config, failures already logged, debug timings."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.config: CoreConfig
        self.config, self.refused_ignores = core_config(options)
        self.logged: set[str] = set()
        config = self.config
        # A session's core is kept in memory while the host is warm: one loaded for an event has
        # that event's changes written back at once; a warm one is stored at main-loop turn end
        # (`cores.write`), or, on a process-local store, when it leaves memory.
        self.cores: SessionCache[LoopBreakerCore] = SessionCache(
            STATE_KEY,
            load=lambda stored: _load_core(stored, config),
            dump=dump,
            max_sessions=MAX_HOT_SESSIONS,
            loaded=_set_ignores,
            leaving=_add_stats,
        )
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

    async def flush(self, engine: Engine, event: Event) -> None:
        """Adds this session's new counts to the store's totals in one atomic update."""
        taken: Stats = await self.cores.use(engine, event, lambda core: core.policy.take_pending())
        if taken.is_empty():
            return
        try:
            await engine.store.update(STATS_KEY, lambda stored: merge_stats(stored, taken))
        except Exception:
            # Counts not written go back to the session, for the next flush.
            await self.cores.use(engine, event, lambda core: core.policy.pending.add(taken))
            raise

    async def flush_all(self) -> None:
        """Every session's new counts, for a reader of the totals when turn ends do not add
        them (a process-local store)."""
        for engine, core in self.cores.items():
            await _add_stats(engine, core)


def _load_core(stored: object, config: CoreConfig) -> LoopBreakerCore:
    """A session's core from its stored copy (a fresh one for a new session); ValueError when
    unreadable, and the session starts over."""
    return LoopBreakerCore(config) if stored is None else load(stored, config)


async def _set_ignores(engine: EnginePort, core: LoopBreakerCore) -> None:
    """A loaded core takes the plugin-wide ignore list, which lives beside the session's state."""
    core.policy.set_ignores(ignore_list(await engine.store.get(IGNORE_KEY)))


async def _add_stats(engine: EnginePort, core: LoopBreakerCore) -> None:
    """The core's counts not yet in the store's totals go there (a core leaving memory too)."""
    taken: Stats = core.policy.take_pending()
    if taken.is_empty():
        return
    try:
        await engine.store.update(STATS_KEY, lambda stored: merge_stats(stored, taken))
    except Exception:
        # Counts not written go back to the session, for the next flush.
        core.policy.pending.add(taken)
        raise


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
