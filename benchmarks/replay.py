"""Replay speed: the largest shared transcript, 5 rounds, through every installed plugin."""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import anyio

from framework._host import Host
from framework._logging import configure_logging
from framework._replay import ReplayClock, replay_sessions
from framework._transcript import Transcripts, read_transcripts

ROUNDS = 5
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"


async def rounds(transcripts: Transcripts, *, entry_points: bool) -> tuple[int, float, list[str]]:
    """Replay ROUNDS times, each on a fresh host; the replay alone is timed, not the loading."""
    events = 0
    replay_s = 0.0
    plugins: list[str] = []
    for _ in range(ROUNDS):
        clock = ReplayClock()
        with TemporaryDirectory() as scratch:
            host = Host(
                store="memory://",
                clock=clock,
                entry_points=entry_points,
                sandbox=Path(scratch),
            )
            async with host:
                plugins = [p.name for p in host.loaded()]
                started = time.perf_counter()
                report = await replay_sessions(host, clock, transcripts)
                replay_s += time.perf_counter() - started
        events += report.events
    return events, replay_s, plugins


async def main() -> int:
    if not CORPUS.is_dir():
        print(f"shared transcript corpus not found at {CORPUS}", file=sys.stderr)
        return 2
    configure_logging("error")
    largest = max(CORPUS.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    started = time.perf_counter()
    transcripts = read_transcripts([largest])
    read_s = time.perf_counter() - started
    bare_events, bare_s, _ = await rounds(transcripts, entry_points=False)
    events, replay_s, plugins = await rounds(transcripts, entry_points=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"transcript = {largest.name} ({largest.stat().st_size / 1e6:.1f} MB)")
    print(f"plugins = {', '.join(plugins) or 'none'}")
    print(f"read_ms = {read_s * 1000:.1f}")
    print(f"rounds = {ROUNDS}, events = {events}, replay_s = {replay_s:.3f}")
    print(f"peak_rss_mb = {peak_mb:.1f}")
    bare_rate = bare_events / bare_s if bare_s else 0.0
    rate = events / replay_s if replay_s else 0.0
    print(f"events_per_s_without_plugins = {int(bare_rate)}")
    # The same replay without plugins, measured in this run: the plugins' share of the time.
    ratio = rate / bare_rate if bare_rate else 0.0
    print(f"ratio events_per_s/events_per_s_without_plugins = {ratio:.3f}")
    print(f"events_per_s = {int(rate)}")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
