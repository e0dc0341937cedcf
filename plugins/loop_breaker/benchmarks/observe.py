"""Per-observation cost of the loop-breaker core with 100 and with 10,000 earlier calls.

The answers kept per process for inputs seen again (`core.memo`) are warm after the first of
the repeats, which replay the same observations (and the workload repeats its inputs within a
pass too): the warm lines measure mostly memo hits. The cold line empties the memo before each
measured call, so every call is computed as on its first sight in the process."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Mapping

from loop_breaker.core import LoopBreakerCore, Observation, memo

MEASURED = 2000
REPEATS = 5


def _workload(index: int) -> tuple[str, Mapping[str, object], str, str]:
    """A mix like a real session: reads, edits of many files, passing and failing runs, polls."""
    step = index % 10
    if step in (0, 4):
        return ("Read", {"file_path": f"/repo/src/mod_{index % 37}.py"}, "ok", "line\n" * 120)
    if step in (1, 5):
        old, new = f"value = {index}", f"value = {index + 1}"
        inp = {"file_path": f"/repo/src/mod_{index % 23}.py", "old_string": old, "new_string": new}
        return ("Edit", inp, "ok", "The file has been updated.")
    if step == 2:
        failing = "FAIL tests/test_mod.py::test_value\nAssertionError: assert 3 == 4\n"
        return ("Bash", {"command": "pytest -q tests/test_mod.py"}, "error", "." * 400 + failing)
    if step == 3:
        return ("Grep", {"pattern": f"def f{index % 11}", "path": "/repo"}, "ok", "src/a.py:3\n")
    if step == 6:
        return ("Bash", {"command": f"git diff --stat HEAD~{index % 5}"}, "ok", "3 files changed\n")
    if step == 7:
        return ("BashOutput", {"bash_id": "b1"}, "ok", f"progress {index}\n")
    if step == 8:
        return ("Bash", {"command": "ls src"}, "ok", "a.py\nb.py\n")
    return ("Glob", {"pattern": "**/*.py"}, "ok", "src/a.py\nsrc/b.py\n" * 20)


def _observations(start: int, count: int) -> list[Observation]:
    made = []
    for index in range(start, start + count):
        tool, tool_input, outcome, text = _workload(index)
        loop_id = "main" if index % 4 else f"agent-{index % 3}"
        made.append(
            Observation(f"t{index}", loop_id, tool, tool_input, outcome, text, index * 1000)  # type: ignore[arg-type]
        )
    return made


def p50_us(earlier: int, *, cold: bool = False) -> float:
    """Median cost of one `observe` after `earlier` calls in the same session; `cold`: with the
    memo emptied before each measured call (not timed)."""
    medians = []
    for _ in range(REPEATS):
        core = LoopBreakerCore()
        for observation in _observations(0, earlier):
            core.observe(observation)
        timings = []
        for observation in _observations(earlier, MEASURED):
            if cold:
                memo.forget_all()
            started = time.perf_counter_ns()
            core.observe(observation)
            timings.append(time.perf_counter_ns() - started)
        medians.append(statistics.median(timings) / 1000)
    return min(medians)


def main() -> None:
    at_100 = p50_us(100)
    at_10000 = p50_us(10_000)
    cold_at_100 = p50_us(100, cold=True)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"p50 at 100 earlier calls: {at_100:.1f} us")
    print(f"p50 at 10000 earlier calls: {at_10000:.1f} us")
    print(f"p50 at 100 earlier calls, cold (memo emptied before each call): {cold_at_100:.1f} us")
    print(f"peak RSS: {peak_kib / 1024:.1f} MiB")
    print(f"observe_p50_us = {max(at_100, at_10000):.1f}")
    print(f"ratio p50_at_10000/p50_at_100 = {at_10000 / at_100:.2f}")


if __name__ == "__main__":
    main()
