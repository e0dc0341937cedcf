"""`--jobs N`: session groups replayed in worker processes, each its own host, merged in order.

A worker is a host of its own, as a second machine replaying part of the history would be: its
own clock, plugins and (for `memory://`) store; with a shared store URL (SQLite file, Redis) the
workers use it as concurrent hosts do. Groups go out in serial order and their reports are handed
on in that order, whichever worker finishes first, so the report is the serial run's.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import anyio
import anyio.to_thread

from framework.core.engine import FakeClock
from framework.core.host import Host
from framework.core.loading import discovered_candidates
from framework.core.settings import HostSettings
from framework.replay.reader import TranscriptGroup, TranscriptPathError
from framework.replay.runner import (
    GroupReport,
    PluginStatus,
    ReplayCollector,
    ReplayReport,
    SessionReport,
    Window,
    chosen_groups,
    host_failures,
    host_status,
    replay_group,
    replay_paths,
    scratch_records,
    settled,
    with_only,
)
from framework.stores.base import StoreError

__all__ = ["ReplayError", "default_jobs", "replay_jobs"]

_POLL_S = 0.5


class ReplayError(Exception):
    """A worker could not replay: its host did not open, or the process died; names the cause."""


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class _HostArgs:
    plugins: Sequence[Any] | None
    entry_points: bool
    settings: HostSettings | None
    store: str
    sandbox: Path


def replay_jobs(
    paths: Sequence[Path],
    *,
    jobs: int,
    plugins: Sequence[Any] | None = None,
    entry_points: bool = True,
    only: Sequence[str] | None = None,
    store: str = "memory://",
    settings: HostSettings | None = None,
    window: Window | None = None,
    into: Path | None = None,
    keep_actions: bool = True,
    on_start: Callable[[tuple[PluginStatus, ...]], None] | None = None,
    on_session: Callable[[SessionReport], None] | None = None,
    progress: Callable[[GroupReport, int], None] | None = None,
) -> ReplayReport:
    """Replay the transcripts under `paths` with `jobs` worker processes (1: in this process).

    Not async: the workers are forked before any event loop runs here. `progress(group, total)`
    sees each group as it is handed on, with the total bytes to read.
    """
    window = window or Window()
    groups = chosen_groups(paths, window)
    if jobs <= 1 or len(groups) <= 1:
        return anyio.run(
            lambda: replay_paths(
                paths,
                plugins=plugins,
                entry_points=entry_points,
                only=only,
                store=store,
                settings=settings,
                window=window,
                into=into,
                keep_actions=keep_actions,
                on_start=on_start,
                on_session=on_session,
                progress=progress,
                groups=groups,
            )
        )
    total = sum(g.size for g in groups)
    with TemporaryDirectory(prefix="hookchain-replay-") as folder:
        scratch = into if into is not None else Path(folder)
        args = _HostArgs(plugins, entry_points, with_only(settings, only), store, scratch)
        collector: ReplayCollector | None = None

        def started(plugins_loaded: tuple[PluginStatus, ...]) -> None:
            nonlocal collector
            collector = ReplayCollector(
                plugins_loaded,
                keep=keep_actions,
                on_session=on_session,
                progress=progress,
                total=total,
            )
            if on_start is not None:
                on_start(plugins_loaded)

        def handed_on(report: GroupReport) -> None:
            assert collector is not None
            collector.add(report)

        failures = _run_workers(groups, min(jobs, len(groups)), args, window, started, handed_on)
        assert collector is not None
        return collector.report(failures, scratch_records(scratch), into)


def _context() -> Any:
    # Forked workers start with the host's modules and the plugins already imported; where fork
    # is missing (macOS, Windows default to spawn) the arguments must pickle.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _preload(args: _HostArgs) -> None:
    """Import the installed plugins here, before the fork: each worker then starts with them
    imported instead of importing them again (most of a host's start). A plugin that fails to
    import is left to the workers' hosts, which report it as they always do."""
    if not args.entry_points:
        return
    only = set(args.settings.plugins) if args.settings is not None else set()
    disabled = set(args.settings.disable_plugins) if args.settings is not None else set()
    folder = args.settings.plugins_dir if args.settings is not None else None
    for candidate in discovered_candidates(folder):
        if (only and candidate.name not in only) or candidate.name in disabled:
            continue
        with contextlib.suppress(Exception):
            candidate.load()


def _run_workers(
    groups: Sequence[TranscriptGroup],
    jobs: int,
    args: _HostArgs,
    window: Window,
    started: Callable[[tuple[PluginStatus, ...]], None],
    handed_on: Callable[[GroupReport], None],
) -> dict[str, int]:
    _preload(args)
    context = _context()
    tasks: Any = context.Queue()
    results: Any = context.Queue()
    workers = [
        context.Process(
            target=_worker, args=(n, tasks, results, args, window), daemon=True, name=f"replay-{n}"
        )
        for n in range(jobs)
    ]
    for worker in workers:
        worker.start()
    try:
        # Queued after the fork: the queue's feeder thread is never copied into a worker.
        for index, group in enumerate(groups):
            tasks.put((index, group))
        for _ in workers:
            tasks.put(None)
        return _merge(workers, results, len(groups), started, handed_on)
    finally:
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.kill()
                worker.join(timeout=5)
        tasks.close()
        results.close()


def _merge(
    workers: Sequence[Any],
    results: Any,
    count: int,
    started: Callable[[tuple[PluginStatus, ...]], None],
    handed_on: Callable[[GroupReport], None],
) -> dict[str, int]:
    waiting: dict[int, GroupReport] = {}
    next_index = 0
    finished = 0
    failures: dict[str, int] = {}
    greeted = False
    while finished < len(workers):
        try:
            kind, key, value = results.get(timeout=_POLL_S)
        except queue.Empty:
            dead = [w for w in workers if w.exitcode not in (None, 0)]
            if dead:
                raise ReplayError(
                    f"replay worker {dead[0].name} died (exit {dead[0].exitcode})"
                ) from None
            continue
        if kind == "fatal":
            raise ReplayError(value)
        if kind == "hello":
            if not greeted:
                greeted = True
                started(value)
        elif kind == "group":
            waiting[key] = value
            while next_index in waiting:
                handed_on(waiting.pop(next_index))
                next_index += 1
        elif kind == "bye":
            finished += 1
            for site, n in value.items():
                failures[site] = failures.get(site, 0) + n
    if next_index != count:
        raise ReplayError(f"replay workers answered {next_index} of {count} session groups")
    return failures


def _worker(number: int, tasks: Any, results: Any, args: _HostArgs, window: Window) -> None:
    # Ctrl-C is the parent's to handle: it stops the workers, so none prints its own traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        anyio.run(_serve, tasks, results, args, window)
    except (StoreError, TranscriptPathError, ReplayError) as error:
        results.put(("fatal", number, str(error)))
    except Exception as error:  # the parent must hear of it, not wait for a silent worker
        results.put(("fatal", number, f"replay worker {number}: {type(error).__name__}: {error}"))


async def _serve(tasks: Any, results: Any, args: _HostArgs, window: Window) -> None:
    clock = FakeClock(start_ms=0, instant_sleep=True)
    host = Host(
        plugins=args.plugins,
        entry_points=args.entry_points,
        settings=args.settings,
        store=args.store,
        clock=clock,
        sandbox=args.sandbox,
    )
    async with host:
        results.put(("hello", 0, host_status(host)))
        with settled():
            await _serve_groups(tasks, results, host, clock, window)
        failures = host_failures(host)
    results.put(("bye", 0, failures))


async def _serve_groups(
    tasks: Any, results: Any, host: Host, clock: FakeClock, window: Window
) -> None:
    while True:
        task = await anyio.to_thread.run_sync(tasks.get)
        if task is None:
            return
        index, group = task
        results.put(("group", index, await replay_group(host, clock, group, window)))
