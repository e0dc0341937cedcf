"""Time write-guard's pure decision for a Write and for Bash commands; print medians, peak RSS."""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable

from write_guard._decide import decide
from write_guard._paths import PathContext
from write_guard._policy import Policy
from write_guard._surface import extract_surface

ROUNDS = 20_000


def median_us(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    for _ in range(200):
        fn()
    samples = []
    clock = time.perf_counter_ns
    for _ in range(rounds):
        started = clock()
        fn()
        samples.append(clock() - started)
    return statistics.median(samples) / 1000


def main() -> None:
    workspace = tempfile.mkdtemp(prefix="wg-bench-")
    os.makedirs(os.path.join(workspace, "src"))
    context = PathContext(cwd=workspace, home=os.path.expanduser("~"), project_dir=workspace)
    policy = Policy(preset="workspace", workspace_root=workspace, extra_roots=("/tmp",))
    write_input = {"file_path": os.path.join(workspace, "src", "app.py"), "content": "x"}
    bash_inputs = {
        "simple": {"command": "ls -la src"},
        "compound": {"command": "cd src && sed -i 's/a/b/' app.py 2>&1 | tee ../build.log"},
        "git": {"command": "git status && git log --oneline | head -20"},
    }

    write = median_us(lambda: decide(extract_surface("Write", write_input), context, policy))
    for name, tool_input in bash_inputs.items():

        def bash_once(tool_input: dict[str, str] = tool_input) -> object:
            return decide(extract_surface("Bash", tool_input), context, policy)

        bash = median_us(bash_once)
        print(f"bash_{name}_median_us = {bash:.1f}")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak_rss_mib = {peak_kib / 1024:.1f}")
    print(f"decide_median_us = {write:.1f}")


if __name__ == "__main__":
    main()
