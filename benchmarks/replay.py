"""Replay speed and memory: dispatch alone, and what a user waits for end to end.

Dispatch only (`events_per_s`): the largest shared transcript, read once, replayed 5 rounds, each
through a fresh host; the replays alone are timed, not the loading of the host nor the reading.
Plugins keep per-process caches of what they computed for a call (write-guard's shell verdicts,
loop-breaker's action keys), and rounds 2-5 replay the same calls: `events_per_s_first_round`
is the first round alone, the rate for sessions the process has never seen.

End to end (`events_per_s_end_to_end`): `hookchain replay`'s own path, `replay_jobs`, over a
folder: grouping, reading, rebuilding, dispatch, loading the host and its plugins. The folder is
the shared transcripts copied 1 and 10 times into a temporary folder (each copy a project folder
of its own, as a user's history has many), so the 10x run shows whether memory follows the input
(everything read first) or the largest session (streamed). Its baseline, `dispatch_only`, is the
dispatch of the same sessions, read beforehand, measured in the same run.

Every sample runs in a process of its own, so each pays for a cold interpreter as a
`hookchain replay` run does and its peak RSS is its own. A shared machine can slow a sample down
but never speed it up, so several samples are taken and the fastest is the result, as `timeit`
reports its best; every sample is printed. The `--jobs 1` and `--jobs 2` samples of the speed-up
are taken in turns, and the cores the best of each used are printed: `--jobs 2` below 2.0 cores
means other work on the machine had part of the second core.

The samples import hookchain as an installed copy does: from bytecode compiled once (pip compiles
a wheel's modules when it installs them; an editable install writes them at its first import). A
machine with `PYTHONDONTWRITEBYTECODE` set would otherwise compile every module of the host and
its plugins from source in every sample (about 0.9 billion instructions, more than the dispatch
of a copy of the transcripts), so the samples get a bytecode cache of their own, filled first.
"""

from __future__ import annotations

import gc
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory

import anyio

from framework.core.engine import FakeClock
from framework.core.host import Host
from framework.core.logging import configure_logging
from framework.replay.parallel import replay_jobs
from framework.replay.reader import (
    Transcripts,
    _read_file,
    _records,
    group_transcripts,
    read_group,
    read_transcripts,
    transcript_files,
)
from framework.replay.rebuild import Corpus
from framework.replay.runner import replay_sessions

ROUNDS = 5
SAMPLES = 5
END_TO_END_SAMPLES = 3
PAIRED_SAMPLES = 5
COPIES = 10
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"


async def rounds(
    transcripts: Transcripts,
    *,
    entry_points: bool,
    count: int = ROUNDS,
    each: list[tuple[int, float]] | None = None,
) -> tuple[int, float, list[str], float]:
    """Replay `count` times, each on a fresh host; the replay alone is timed, not the loading:
    the events, the wall and the CPU seconds of the replays, and the plugins. `each` gets every
    round's events and seconds."""
    events = 0
    replay_s = cpu_s = 0.0
    plugins: list[str] = []
    for _ in range(count):
        clock = FakeClock(start_ms=0, instant_sleep=True)
        with TemporaryDirectory() as scratch:
            host = Host(
                store="memory://",
                clock=clock,
                entry_points=entry_points,
                sandbox=Path(scratch),
            )
            async with host:
                plugins = [p.name for p in host.loaded()]
                cpu = time.process_time()
                started = time.perf_counter()
                report = await replay_sessions(host, clock, transcripts)
                round_s = time.perf_counter() - started
                replay_s += round_s
                cpu_s += time.process_time() - cpu
        events += report.events
        if each is not None:
            each.append((report.events, round_s))
    return events, replay_s, plugins, cpu_s


def peak_rss_mb() -> float:
    """This process's peak RSS, or its workers' when they ran the replay (Linux: KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


async def dispatch_sample(path: Path) -> int:
    """The existing dispatch-only sample, printed as `name = value` lines for the parent."""
    configure_logging("error")
    started = time.perf_counter()
    transcripts = read_transcripts([path])
    read_s = time.perf_counter() - started
    bare_events, bare_s, _, _ = await rounds(transcripts, entry_points=False)
    each: list[tuple[int, float]] = []
    events, replay_s, plugins, _ = await rounds(transcripts, entry_points=True, each=each)
    # The first round meets the plugins' per-process caches empty, as a replay of sessions never
    # seen does; the later rounds replay the same calls again, which those caches remember.
    first_events, first_s = each[0]
    print(f"events_per_s_first_round = {first_events / first_s if first_s else 0.0:.1f}")
    print(f"plugins = {', '.join(plugins) or 'none'}")
    print(f"read_ms = {read_s * 1000:.1f}")
    print(f"events = {events}")
    print(f"peak_rss_mb = {peak_rss_mb():.1f}")
    print(f"events_per_s_without_plugins = {bare_events / bare_s if bare_s else 0.0:.1f}")
    print(f"events_per_s = {events / replay_s if replay_s else 0.0:.1f}")
    return 0


async def imports_sample() -> int:
    """A host opened with the installed plugins and closed: everything a sample imports."""
    with TemporaryDirectory() as scratch:
        async with Host(store="memory://", entry_points=True, sandbox=Path(scratch)) as host:
            print(f"plugins = {len(host.loaded())}")
    return 0


async def folder_dispatch_sample(folder: Path) -> int:
    """Dispatch only, of the sessions of a whole folder read beforehand: the end-to-end baseline."""
    configure_logging("error")
    transcripts = read_transcripts([folder])
    events, replay_s, _, cpu_s = await rounds(transcripts, entry_points=True, count=2)
    print(f"events_per_s = {events / replay_s if replay_s else 0.0:.1f}")
    print(f"events_per_cpu_s = {events / cpu_s if cpu_s else 0.0:.1f}")
    return 0


def end_to_end_sample(folder: Path, jobs: int) -> int:
    """`hookchain replay FOLDER --jobs N`, the whole of it but printing, timed."""
    configure_logging("error")
    cpu = time.process_time()
    started = time.perf_counter()
    report = replay_jobs([folder], jobs=jobs)
    elapsed = time.perf_counter() - started
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    own_s = time.process_time() - cpu
    workers_s = workers.ru_utime + workers.ru_stime
    print(f"events = {report.events}")
    print(f"cpu_s = {own_s + workers_s:.4f}")
    # The parent's CPU counted as serial work (grouping, loading the plugins before the fork,
    # merging) and the workers' split evenly: the ideal with `jobs` free cores. A worker busier
    # than the others makes the real run longer, so this is an upper bound of the speed-up.
    print(f"critical_cpu_s = {own_s + workers_s / jobs:.4f}")
    print(f"sessions = {len(report.sessions)}")
    print(f"elapsed_s = {elapsed:.4f}")
    print(f"peak_rss_mb = {peak_rss_mb():.1f}")
    return 0


def phases(folder: Path) -> int:
    """Where the CPU time of reading goes, phase by phase, against the dispatch of the same
    sessions (`--phases [FOLDER]`, the shared transcripts by default; best of 3 each): grouping
    the files, decoding the records it keeps, filtering them into streams, rebuilding the events,
    dispatching them. The phases read FOLDER as one input, so give it one project folder, not
    copies of one (their subagents would meet)."""
    configure_logging("error")
    files = transcript_files([folder])

    def best(work: Callable[[], object]) -> float:
        # The collector off, as the reader has it: else the phases before the rebuild would
        # pay for collections the reader never makes.
        times = []
        for _ in range(3):
            gc.disable()
            started = time.process_time()
            work()
            times.append(time.process_time() - started)
            gc.enable()
            gc.collect()
        return min(times)

    def decode() -> None:
        corpus = Corpus()
        for path in files:
            with path.open("rb") as handle:
                for _ in _records(corpus, handle):
                    pass

    def streams() -> None:
        corpus = Corpus()
        for path in files:
            with path.open("rb") as handle:
                _read_file(corpus, str(path), _records(corpus, handle))

    group_s = best(lambda: group_transcripts(files))
    decode_s = best(decode)
    streams_s = best(streams)
    read_s = best(lambda: [read_group(g) for g in group_transcripts(files)])
    transcripts = read_transcripts([folder])
    events, _, _, dispatch_s = anyio.run(lambda: rounds(transcripts, entry_points=True, count=3))
    dispatch_s /= 3
    print(f"folder = {folder}, events = {events // 3}")
    print(f"group_ms = {group_s * 1000:.1f}")
    print(f"decode_ms = {decode_s * 1000:.1f} (lines, type peek, records into their read keys)")
    print(f"filter_streams_ms = {(streams_s - decode_s) * 1000:.1f}")
    print(f"rebuild_ms = {(read_s - streams_s - group_s) * 1000:.1f}")
    print(f"read_ms = {read_s * 1000:.1f}")
    print(f"dispatch_ms = {dispatch_s * 1000:.1f}")
    print(f"ratio read/dispatch = {read_s / dispatch_s:.3f}")
    return 0


ROOT = Path(__file__).resolve().parents[1]
SAMPLE_ENV: dict[str, str] = dict(os.environ)


def compiled_once(cache: Path) -> None:
    """Compile the host's and the plugins' modules into `cache`, which every sample then reads
    (see the module's docstring): the samples pay for imports as an installed copy does. With a
    prefix Python reads no `__pycache__` folder, its libraries' included: a first process that
    opens a host with the plugins writes what else a sample imports."""
    SAMPLE_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    SAMPLE_ENV["PYTHONPYCACHEPREFIX"] = str(cache)
    packages = [
        ROOT / "framework",
        *sorted(p for p in (ROOT / "plugins").glob("*/*") if (p / "__init__.py").is_file()),
    ]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *map(str, packages)],
        env=SAMPLE_ENV,
        check=True,
        timeout=300,
    )
    run_sample("imports")


def run_sample(*args: str) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, __file__, "--sample", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env=SAMPLE_ENV,
    )
    if done.returncode != 0:
        raise SystemExit(f"a sample failed (exit {done.returncode}):\n{done.stderr}")
    return dict(line.split(" = ", 1) for line in done.stdout.splitlines() if " = " in line)


def copies(into: Path, count: int) -> Path:
    """`count` copies of the shared transcripts under `into`, one project folder each."""
    folder = into / f"x{count}"
    for n in range(count):
        shutil.copytree(CORPUS, folder / f"project-{n:02d}", ignore=shutil.ignore_patterns("*.md"))
    return folder


class Runs:
    """The samples of one end-to-end configuration: the best is the result (see above)."""

    def __init__(self) -> None:
        self.runs: list[dict[str, str]] = []

    def add(self, run: dict[str, str]) -> None:
        self.runs.append(run)

    def rates(self) -> list[float]:
        return [int(r["events"]) / float(r["elapsed_s"]) for r in self.runs]

    def best_rate(self) -> float:
        return max(self.rates())

    def best(self) -> dict[str, str]:
        rates = self.rates()
        return self.runs[rates.index(max(rates))]

    def per_cpu(self) -> float:
        """The best events per CPU second (workers' CPU included)."""
        return max(int(r["events"]) / float(r["cpu_s"]) for r in self.runs)

    def critical_s(self) -> float:
        """The least CPU time on the longest path of a sample (see `end_to_end_sample`)."""
        return min(float(r["critical_cpu_s"]) for r in self.runs)

    def cores(self) -> float:
        """The CPU seconds per second of the best sample: about `jobs` when it had its cores."""
        best = self.best()
        return float(best["cpu_s"]) / float(best["elapsed_s"])


def end_to_end(folder: Path, jobs: int, samples: int = END_TO_END_SAMPLES) -> Runs:
    runs = Runs()
    for _ in range(samples):
        runs.add(run_sample("end-to-end", str(folder), str(jobs)))
    return runs


def paired(folder: Path, samples: int) -> tuple[Runs, Runs]:
    """`--jobs 1` and `--jobs 2` of the same folder, taken in turns: a spell of other work on
    the shared machine then falls on both, not on one of them only."""
    one, two = Runs(), Runs()
    for _ in range(samples):
        one.add(run_sample("end-to-end", str(folder), "1"))
        two.add(run_sample("end-to-end", str(folder), "2"))
    return one, two


def main() -> int:
    if not CORPUS.is_dir():
        print(f"shared transcript corpus not found at {CORPUS}", file=sys.stderr)
        return 2
    with TemporaryDirectory(prefix="hookchain-bench-pycache-") as cache:
        compiled_once(Path(cache))
        print(f"bytecode = compiled once into {cache} (the samples' PYTHONPYCACHEPREFIX)")
        return measure()


def measure() -> int:
    largest = max(CORPUS.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    samples = [run_sample("dispatch", str(largest)) for _ in range(SAMPLES)]
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
    first = max(float(s["events_per_s_first_round"]) for s in samples)
    print(f"events_per_s_first_round = {int(first)} (caches empty, one-time set-up paid)")

    with TemporaryDirectory(prefix="hookchain-bench-") as scratch:
        one, ten = copies(Path(scratch), 1), copies(Path(scratch), COPIES)
        size = sum(p.stat().st_size for p in one.rglob("*.jsonl"))
        print(f"\nfolder = the shared transcripts, {size / 1e6:.1f} MB; x{COPIES}: {COPIES} copies")
        folder_runs = [run_sample("folder-dispatch", str(one)) for _ in range(END_TO_END_SAMPLES)]
        folder_rates = [float(r["events_per_s"]) for r in folder_runs]
        dispatch_only = max(folder_rates)
        dispatch_cpu = max(float(r["events_per_cpu_s"]) for r in folder_runs)
        x1 = end_to_end(one, 1)
        x10, x10_2 = paired(ten, PAIRED_SAMPLES)
        rate_1, run_1, rate_10, run_10 = x1.best_rate(), x1.best(), x10.best_rate(), x10.best()
        rate_10_2 = x10_2.best_rate()
        shown = ", ".join
        print(f"dispatch_only samples = {shown(str(int(r)) for r in folder_rates)}")
        print(f"end_to_end x1 --jobs 1 samples = {shown(str(int(r)) for r in x1.rates())}")
        print(f"end_to_end x{COPIES} --jobs 1 samples = {shown(str(int(r)) for r in x10.rates())}")
        print(
            f"end_to_end x{COPIES} --jobs 2 samples = {shown(str(int(r)) for r in x10_2.rates())}"
        )
        print(f"events x1 = {run_1['events']}, x{COPIES} = {run_10['events']}")
        print(f"events_per_s_dispatch_only = {int(dispatch_only)} (the folder's sessions)")
        print(f"events_per_s_end_to_end_x1 = {int(rate_1)} (host start included)")
        print(f"events_per_s_end_to_end = {int(rate_10)} (x{COPIES}, --jobs 1)")
        print(f"ratio end_to_end_x1/dispatch_only = {rate_1 / dispatch_only:.3f}")
        print(f"ratio end_to_end/dispatch_only = {rate_10 / dispatch_only:.3f}")
        rss_1, rss_10 = float(run_1["peak_rss_mb"]), float(run_10["peak_rss_mb"])
        print(f"peak_rss_mb_1x = {rss_1:.1f}")
        print(f"peak_rss_mb_{COPIES}x = {rss_10:.1f}")
        print(f"ratio peak_rss_{COPIES}x/1x = {rss_10 / rss_1:.3f}")
        print(f"events_per_s_end_to_end_jobs_2 = {int(rate_10_2)} (x{COPIES})")
        # Cores used by the best samples: below 2.0 for --jobs 2, the machine's other work took
        # a share of the second core, and the speed-up below is the less for it.
        print(f"cores used --jobs 1 = {x10.cores():.2f}, --jobs 2 = {x10_2.cores():.2f}")
        print(f"speedup jobs_2/jobs_1 = {rate_10_2 / rate_10:.3f} (best of {PAIRED_SAMPLES} each)")
        # The same in CPU time, which a machine shared with other work does not distort: the
        # reading's cost against the plugins' own, and what the workers cost beyond one job.
        cpu_10, cpu_10_2 = x10.per_cpu(), x10_2.per_cpu()
        print(f"events_per_cpu_s dispatch_only = {int(dispatch_cpu)}, end_to_end = {int(cpu_10)}")
        print(f"ratio end_to_end/dispatch_only (cpu) = {cpu_10 / dispatch_cpu:.3f}")
        print(f"ratio cpu_s jobs_2/jobs_1 = {cpu_10 / cpu_10_2:.3f} (1.0: workers cost no more)")
        print(f"end_to_end x1 events_per_cpu_s = {int(x1.per_cpu())}")
        # The speed-up from CPU time, at best (see `critical_cpu_s`): the wall-time one above is
        # less when the machine's other work had part of the cores (see the cores used).
        critical = x10.critical_s() / x10_2.critical_s()
        print(f"speedup jobs_2/jobs_1 (cpu, workers' share split evenly: ideal) = {critical:.3f}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--phases"]:
        sys.exit(phases(Path(sys.argv[2]) if sys.argv[2:] else CORPUS))
    if sys.argv[1:2] == ["--sample"]:
        kind, *args = sys.argv[2:]
        if kind == "dispatch":
            sys.exit(anyio.run(dispatch_sample, Path(args[0])))
        if kind == "imports":
            sys.exit(anyio.run(imports_sample))
        if kind == "folder-dispatch":
            sys.exit(anyio.run(folder_dispatch_sample, Path(args[0])))
        sys.exit(end_to_end_sample(Path(args[0]), int(args[1])))
    sys.exit(main())
