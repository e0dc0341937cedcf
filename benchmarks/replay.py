"""Replay speed: the largest shared transcript, 5 rounds, through every installed plugin.

One sample replays the transcript 5 times, each time through a fresh host, in a process of its
own (so every sample pays for a cold interpreter, as a `hookchain replay` run does), and times
the replays alone: not the loading of the host, not the reading of the transcript. A shared
machine can slow a sample down but never speed it up, so `SAMPLES` samples are taken and the
fastest is the result, as `timeit` reports its best; every sample and their median are printed.
The same replay without plugins, measured in each sample, is the baseline of the ratio.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import anyio

from framework.core.host import Host
from framework.core.logging import configure_logging
from framework.replay.reader import Transcripts, read_transcripts
from framework.replay.runner import ReplayClock, replay_sessions

ROUNDS = 5
SAMPLES = 5
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


async def sample(largest: Path) -> int:
    """One sample, printed as `name = value` lines for the parent to read."""
    configure_logging("error")
    started = time.perf_counter()
    transcripts = read_transcripts([largest])
    read_s = time.perf_counter() - started
    bare_events, bare_s, _ = await rounds(transcripts, entry_points=False)
    events, replay_s, plugins = await rounds(transcripts, entry_points=True)
    print(f"plugins = {', '.join(plugins) or 'none'}")
    print(f"read_ms = {read_s * 1000:.1f}")
    print(f"events = {events}")
    print(f"peak_rss_mb = {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")
    print(f"events_per_s_without_plugins = {bare_events / bare_s if bare_s else 0.0:.1f}")
    print(f"events_per_s = {events / replay_s if replay_s else 0.0:.1f}")
    return 0


def run_sample(largest: Path) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, __file__, "--sample", str(largest)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"a sample failed (exit {done.returncode}):\n{done.stderr}")
    return dict(line.split(" = ", 1) for line in done.stdout.splitlines() if " = " in line)


def main() -> int:
    if not CORPUS.is_dir():
        print(f"shared transcript corpus not found at {CORPUS}", file=sys.stderr)
        return 2
    largest = max(CORPUS.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    samples = [run_sample(largest) for _ in range(SAMPLES)]
    rates = [float(s["events_per_s"]) for s in samples]
    bare_rates = [float(s["events_per_s_without_plugins"]) for s in samples]
    best = max(rates)
    print(f"transcript = {largest.name} ({largest.stat().st_size / 1e6:.1f} MB)")
    print(f"plugins = {samples[0]['plugins']}")
    print(f"read_ms = {samples[0]['read_ms']}")
    print(f"rounds = {ROUNDS} per sample, events = {samples[0]['events']} per sample")
    print(f"samples = {SAMPLES}, each in its own process: {', '.join(str(int(r)) for r in rates)}")
    print(f"events_per_s_median = {int(statistics.median(rates))}")
    print(f"peak_rss_mb = {max(float(s['peak_rss_mb']) for s in samples):.1f}")
    print(f"events_per_s_without_plugins = {int(max(bare_rates))}")
    # The same replay without plugins, measured alongside: the plugins' share of the time.
    print(f"ratio events_per_s/events_per_s_without_plugins = {best / max(bare_rates):.3f}")
    print(f"events_per_s = {int(best)}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sample"]:
        sys.exit(anyio.run(sample, Path(sys.argv[2])))
    sys.exit(main())
