"""Time write-guard in one run: the pure decision (Write; simple, compound and git Bash lines)
for this tree's analyser and for a baseline's (default `main`, loaded from git under another
package name), the sandbox's added cost per shell command, and the snapshot of a work tree of
10,000 files (clean, dirty, dirty with untracked files; this tree's and the baseline's; a
snapshot that prunes the oldest against one that prunes nothing; the first copy into
write-guard's store and its full repack), and the gitlink check of a work tree with 20
checked-out gitlinks. Prints medians, ratios against the baseline, and peak RSS.

    python plugins/write_guard/benchmarks/decide.py [--baseline REF] [--files N]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import io
import os
import re
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from write_guard._control import control_denial
from write_guard._decide import git_hold, preset_denial, protected_denial, resolve_all
from write_guard._gitdir import aside_state, undo
from write_guard._gitlink import LinkWatch, parse_index
from write_guard._paths import PathContext
from write_guard._policy import Policy
from write_guard._sandbox import (
    _find_nested,
    nested_git_dirs,
    plan_sandbox,
    probe,
    redirect_surface,
    wrap_command,
)
from write_guard._snapshot import UNTRACKED_FILE_MAX, Retention, _reclaim, record, store_of
from write_guard._surface import extract_surface

ROUNDS = 20_000
SPAWNS = 40
PLUGIN_DIR = Path(__file__).resolve().parents[1]
BASH_INPUTS = {
    "simple": {"command": "ls -la src"},
    "compound": {"command": "cd src && sed -i 's/a/b/' app.py 2>&1 | tee ../build.log"},
    "git": {"command": "git status && git log --oneline | head -20"},
}


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


def load_baseline(ref: str, into: Path) -> ModuleType:
    """The plugin package as it is at `ref`, importable as `write_guard_baseline`."""
    archive = subprocess.run(
        ["git", "archive", ref, "write_guard"],
        cwd=PLUGIN_DIR, capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / "write_guard_baseline"
    (into / "write_guard").rename(package)
    for module in package.glob("*.py"):
        text = module.read_text(encoding="utf-8")
        # `from write_guard._x import …` and `from write_guard import _x`.
        text = re.sub(r"\bwrite_guard(?=[. ])", "write_guard_baseline", text)
        module.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(into))
    return importlib.import_module("write_guard_baseline")


def decisions(workspace: str, baseline: ModuleType) -> None:
    old_decide = importlib.import_module("write_guard_baseline._decide")
    old_paths = importlib.import_module("write_guard_baseline._paths")
    old_policy = importlib.import_module("write_guard_baseline._policy")
    old_surface = importlib.import_module("write_guard_baseline._surface")
    home = os.path.expanduser("~")
    context = PathContext(cwd=workspace, home=home, project_dir=workspace)
    policy = Policy(preset="workspace", workspace_root=workspace, extra_roots=("/tmp",))
    old_context = old_paths.PathContext(cwd=workspace, home=home, project_dir=workspace)
    old_pol = old_policy.Policy(preset="workspace", workspace_root=workspace, extra_roots=("/tmp",))

    def is_path(name: str) -> bool:
        return os.path.lexists(os.path.join(workspace, name))

    def new(tool: str, tool_input: dict[str, str]) -> object:
        # What write-guard's two tool.call handlers work out for one call.
        surface = extract_surface(tool, tool_input)
        if surface.command is not None and control_denial(surface.command, surface.programs):
            return None
        resolved = resolve_all(surface, context)
        strict = surface.command is None
        return (
            protected_denial(surface, context, policy, resolved, strict=strict)
            or preset_denial(surface, context, policy, resolved)
            or git_hold(surface, is_path)
        )

    def old(tool: str, tool_input: dict[str, str]) -> object:
        return old_decide.decide(
            old_surface.extract_surface(tool, tool_input), old_context, old_pol
        )

    write_input = {"file_path": os.path.join(workspace, "src", "app.py"), "content": "x"}
    cases: list[tuple[str, str, dict[str, str]]] = [("write", "Write", write_input)]
    cases += [(f"bash_{name}", "Bash", tool_input) for name, tool_input in BASH_INPUTS.items()]
    for name, tool, tool_input in cases:
        new_us = median_us(partial(new, tool, tool_input))
        old_us = median_us(partial(old, tool, tool_input))
        print(
            f"{name}_median_us = {new_us:.1f}  baseline = {old_us:.1f}  "
            f"ratio = {new_us / old_us:.2f}"
        )
    del baseline


def spawn_median_ms(command: str, cwd: str) -> float:
    samples = []
    for _ in range(SPAWNS):
        started = time.perf_counter()
        subprocess.run(["/bin/bash", "-c", command], cwd=cwd, check=True, timeout=30)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def sandbox_cost(workspace: str, baseline: ModuleType) -> None:
    """In a git work tree: planning and writing the wrapper, the wrapped `true` (this tree's
    and the baseline's wrapper: the git dirs pinned, the redirections bound and checked after
    the command), and the host's check of the redirections when the result comes back."""
    available = probe("auto")
    if available.bwrap is None:
        print(f"sandbox: unavailable ({available.reason})")
        return
    bwrap = available.bwrap
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=workspace, check=True, timeout=30)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "b"], cwd=workspace,
                   check=True, timeout=30)  # fmt: skip
    old = importlib.import_module(baseline.__name__ + "._sandbox")
    roots = [workspace, "/tmp"]
    plan_us = median_us(lambda: wrap_command("true", plan_sandbox(bwrap, roots, [], [])), 2_000)
    old_plan_us = median_us(
        lambda: old.wrap_command("true", old.plan_sandbox(bwrap, roots, [], [])), 2_000
    )
    wrapped = wrap_command("true", plan_sandbox(bwrap, roots, [], []))
    old_wrapped = old.wrap_command("true", old.plan_sandbox(bwrap, roots, [], []))

    def host_check() -> object:
        surface, writable = redirect_surface(roots)
        return undo(surface.absent, aside_state(surface.absent), writable)

    def host_check_with_gitlinks() -> object:
        surface, writable = redirect_surface(roots)
        links = LinkWatch.start(writable)
        return undo(surface.absent, aside_state(surface.absent), writable), links.finish()

    check_us = median_us(host_check, 2_000)
    links_us = median_us(host_check_with_gitlinks, 2_000)
    # The gitlink check alone, this tree's and the baseline's, on the same roots: what it
    # costs depends on the repositories below them (a temp folder full of others' among them).
    old_links = importlib.import_module(baseline.__name__ + "._gitlink")
    writable = redirect_surface(roots)[1]
    own_us = median_us(lambda: LinkWatch.start(writable).finish(), 2_000)
    old_own_us = median_us(lambda: old_links.LinkWatch.start(writable).finish(), 2_000)
    plain_ms = spawn_median_ms("true", workspace)
    old_ms = spawn_median_ms(old_wrapped, workspace)
    boxed_ms = spawn_median_ms(wrapped, workspace)
    print(f"sandbox_plan_and_wrap_median_us = {plan_us:.1f}  baseline = {old_plan_us:.1f}")
    print(
        f"sandbox_command_median_ms = {boxed_ms:.2f}  plain = {plain_ms:.2f}  "
        f"added_ms = {boxed_ms - plain_ms:.2f}  baseline_added_ms = {old_ms - plain_ms:.2f}"
    )
    print(
        f"git_dir_redirections_host_check_median_us = {check_us:.1f}  "
        f"with_gitlinks = {links_us:.1f}  gitlinks_added_us = {links_us - check_us:.1f}"
    )
    print(
        f"gitlinks_start_and_finish_us = {own_us:.1f}  baseline = {old_own_us:.1f}  "
        f"ratio = {own_us / old_own_us:.2f}"
    )


def _crafted_ieot_index(blocks: int) -> bytes:
    """One entry and an `IEOT` table of `blocks` blocks adding up to it: as a command could
    write one to stall the gitlink check (git writes one block per thread)."""
    entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0) + b"\1" * 20
    entry += struct.pack(">H", 1) + b"a"
    entry += b"\0" * (8 - len(entry) % 8)
    table = struct.pack(">III", 1, 12, 1) + struct.pack(">II", 12, 0) * (blocks - 1)
    body = b"DIRC" + struct.pack(">II", 2, 1) + entry
    body += b"IEOT" + struct.pack(">I", len(table)) + table
    return body + hashlib.sha1(body).digest()


def _refused(parse: Callable[[bytes], object], data: bytes) -> None:
    with contextlib.suppress(ValueError):  # UnreadableIndex, this tree's and the baseline's
        parse(data)


def crafted_index_cost(baseline: ModuleType) -> None:
    """A crafted index (1.6 MB: one entry, 200,000 empty `IEOT` blocks) read by this tree's
    gitlink check and by the baseline's."""
    old = importlib.import_module(baseline.__name__ + "._gitlink")
    data = _crafted_ieot_index(200_000)
    new_ms = median_us(lambda: _refused(parse_index, data), 20) / 1000
    old_ms = median_us(lambda: _refused(old.parse_index, data), 3) / 1000
    print(
        f"gitlinks_crafted_ieot_index_median_ms = {new_ms:.3f}  baseline = {old_ms:.1f}  "
        f"ratio = {new_ms / old_ms:.4f}"
    )


def gitlinks_entered_cost(baseline: ModuleType, repositories: int = 20) -> None:
    """The gitlink check before and after a command that changed nothing, in a work tree
    whose index holds `repositories` checked-out gitlinks (each made by `git init`: its
    config, git's sample hooks and one hook of its own), this tree's and the baseline's."""
    old = importlib.import_module(baseline.__name__ + "._gitlink")
    ws = tempfile.mkdtemp(prefix="wg-bench-links-")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}  # fmt: skip
    try:

        def git(*args: str, cwd: str = ws) -> str:
            return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, timeout=60,
                                  capture_output=True, text=True).stdout.strip()  # fmt: skip

        git("init", "-q")
        git("commit", "-q", "--allow-empty", "-m", "b")
        for n in range(repositories):
            sub = os.path.join(ws, f"sub{n:02d}")
            git("init", "-q", sub)
            git("commit", "-q", "--allow-empty", "-m", "s", cwd=sub)
            Path(sub, ".git", "hooks", "pre-commit").write_text("#!/bin/sh\nexit 0\n")
            head = git("rev-parse", "HEAD", cwd=sub)
            git("update-index", "--add", "--cacheinfo", f"160000,{head},sub{n:02d}")
        time.sleep(2.1)  # past the racy window: the index's reading is kept
        new_us = median_us(lambda: LinkWatch.start([ws]).finish(), 2_000)
        old_us = median_us(lambda: old.LinkWatch.start([ws]).finish(), 2_000)
        print(
            f"gitlinks_{repositories}_entered_unchanged_start_and_finish_us = {new_us:.1f}  "
            f"baseline = {old_us:.1f}  ratio = {new_us / old_us:.2f}"
        )
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def snapshot_cost(files: int, baseline: ModuleType) -> None:
    """The snapshot of a work tree of `files` files, with this tree's `record` (which also
    copies the snapshot and HEAD's history into write-guard's store) and the baseline's, in
    turns: clean, dirty, dirty with untracked files; and the store's own costs: its first copy
    (every object of the repository) and a clean tree whose HEAD moved (one new commit)."""
    old_record = importlib.import_module(baseline.__name__ + "._snapshot").record
    repo = tempfile.mkdtemp(prefix="wg-bench-repo-")
    data = tempfile.mkdtemp(prefix="wg-bench-data-")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}  # fmt: skip
    saved = os.environ.get("HOOKCHAIN_DATA_DIR")
    os.environ["HOOKCHAIN_DATA_DIR"] = data  # the store: never the person's data dir
    try:

        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=repo, env=env, check=True, timeout=300,
                           capture_output=True)  # fmt: skip

        git("init", "-q")
        for index in range(files):
            folder = Path(repo, f"d{index // 100:03d}")
            folder.mkdir(exist_ok=True)
            (folder / f"f{index:05d}.txt").write_text(f"file {index}\n")
        git("add", "-A")
        git("commit", "-qm", "files")

        def seconds(fn: Callable[[], object]) -> float:
            started = time.perf_counter()
            fn()
            return time.perf_counter() - started

        def cpu() -> float:
            """CPU seconds of this process and its finished children (git): what a shared
            machine's load changes far less than the wall time."""
            own, children = (resource.getrusage(who) for who in
                             (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))  # fmt: skip
            return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

        def timed(
            rounds: int, runs: tuple[Callable[[], object], Callable[[], object]] | None = None
        ) -> tuple[float, float, float, float]:
            """Medians (ms) of this tree's and the baseline's snapshot (or of `runs`), taken
            in turns: wall time, then CPU time."""
            runs = runs or (partial(record, repo, "bench"), partial(old_record, repo, "bench"))
            walls: list[list[float]] = [[], []]
            cpus: list[list[float]] = [[], []]
            for _ in range(rounds):
                for which, run in enumerate(runs):
                    started = cpu()
                    walls[which].append(seconds(run))
                    cpus[which].append(cpu() - started)
            new, old, new_cpu, old_cpu = (
                statistics.median(samples) * 1000 for samples in (*walls, *cpus)
            )
            return new, old, new_cpu, old_cpu

        # The nested repositories of a root, walked (bounded) when a sandbox is planned, then
        # cached per root: the walk, and the cached lookup.
        walk_ms = median_us(lambda: _find_nested(repo), 20) / 1000
        cached_us = median_us(lambda: nested_git_dirs(repo), 2_000)
        print(
            f"nested_repos_walk_{files}_files_median_ms = {walk_ms:.2f}  "
            f"cached_us = {cached_us:.1f}"
        )
        # The gitlinks of the index, read again when a command changed it (else cached).
        index = Path(repo, ".git", "index").read_bytes()
        parse_ms = median_us(lambda: parse_index(index), 50) / 1000
        watch_us = median_us(lambda: LinkWatch.start([repo]).finish(), 2_000)
        print(
            f"gitlinks_index_read_{files}_files_median_ms = {parse_ms:.2f}  "
            f"unchanged_index_start_and_finish_us = {watch_us:.1f}"
        )
        store = store_of(os.path.join(repo, ".git"), make=True)
        first = []
        for _ in range(5):
            shutil.rmtree(store, ignore_errors=True)
            first.append(seconds(lambda: record(repo, "bench")))
        first_ms = statistics.median(first) * 1000
        moved = []
        for _ in range(10):
            git("commit", "-q", "--allow-empty", "-m", "more")
            moved.append(seconds(lambda: record(repo, "bench")))
        moved_ms = statistics.median(moved) * 1000
        clean = timed(10)
        for index in range(0, files, files // 10):
            Path(repo, f"d{index // 100:03d}", f"f{index:05d}.txt").write_text("changed\n")
        dirty = timed(10)
        # Pruning: every record past `kept` deletes the oldest snapshot too (in the update-ref
        # calls that add it), against one that prunes nothing (the default keeps 100), in turns.
        few = Retention(kept=5, max_age_s=0)
        pruning = timed(
            20, (partial(record, repo, "bench", None, few), partial(record, repo, "bench"))
        )
        reclaim_ms = statistics.median(seconds(lambda: _reclaim(store, few)) for _ in range(3))
        # New work never added: 100 small files, and one over the cap (left out, not hashed).
        for index in range(100):
            Path(repo, "new", f"n{index:03d}.txt").parent.mkdir(exist_ok=True)
            Path(repo, "new", f"n{index:03d}.txt").write_text(f"new {index}\n" * 50)
        with open(Path(repo, "new", "dump.bin"), "wb") as handle:
            handle.truncate(UNTRACKED_FILE_MAX + 1)
        untracked = timed(10)
        packs = len(list(Path(store, "objects", "pack").glob("*.pack")))
        for name, (new_ms, old_ms, new_cpu, old_cpu) in (
            ("clean", clean), ("dirty", dirty), ("dirty_and_100_untracked", untracked)
        ):  # fmt: skip
            print(
                f"snapshot_{files}_files_{name}_median_ms = {new_ms:.1f}  "
                f"baseline = {old_ms:.1f}  ratio = {new_ms / old_ms:.2f}  "
                f"cpu_ms = {new_cpu:.1f}  baseline_cpu_ms = {old_cpu:.1f}  "
                f"cpu_ratio = {new_cpu / old_cpu:.2f}"
            )
        print(
            f"snapshot_{files}_files_dirty_pruning_median_ms = {pruning[0]:.1f}  "
            f"not_pruning = {pruning[1]:.1f}  ratio = {pruning[0] / pruning[1]:.2f}  "
            f"cpu_ms = {pruning[2]:.1f}  not_pruning_cpu_ms = {pruning[3]:.1f}  "
            f"cpu_ratio = {pruning[2] / pruning[3]:.2f}"
        )
        print(f"snapshot_{files}_files_store_full_repack_median_ms = {reclaim_ms * 1000:.1f}")
        print(f"snapshot_{files}_files_store_first_copy_median_ms = {first_ms:.1f}")
        print(f"snapshot_{files}_files_clean_head_moved_median_ms = {moved_ms:.1f}  "
              f"store_packs = {packs}")  # fmt: skip
    finally:
        if saved is None:
            os.environ.pop("HOOKCHAIN_DATA_DIR", None)
        else:
            os.environ["HOOKCHAIN_DATA_DIR"] = saved
        shutil.rmtree(repo, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git ref of the baseline analyser")
    parser.add_argument("--files", type=int, default=10_000, help="files of the snapshot repo")
    args = parser.parse_args(argv)
    workspace = tempfile.mkdtemp(prefix="wg-bench-")
    loaded = tempfile.mkdtemp(prefix="wg-bench-baseline-")
    try:
        os.makedirs(os.path.join(workspace, "src"))
        baseline: Any = load_baseline(args.baseline, Path(loaded))
        decisions(workspace, baseline)
        sandbox_cost(workspace, baseline)
        crafted_index_cost(baseline)
        gitlinks_entered_cost(baseline)
        snapshot_cost(args.files, baseline)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(loaded, ignore_errors=True)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak_rss_mib = {peak_kib / 1024:.1f}")


if __name__ == "__main__":
    main()
