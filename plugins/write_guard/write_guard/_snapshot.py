"""Recoverable git work: the dirty state of a work tree recorded before a shell command runs.

`git stash create` writes a stash commit of the tracked changes (work tree and index) without
touching either; a ref under `refs/write-guard/` keeps it from garbage collection. What the git
gate cannot see (a script that runs `git reset --hard`) can then be undone with
`hookchain restore`. Untracked files are not part of a stash commit."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass

REF_PREFIX = "refs/write-guard/snapshots/"
GIT_TIMEOUT_S = 10.0
# The host runs git on the agent's work tree: no program of the repository's configuration.
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat")


@dataclass(frozen=True, slots=True)
class Snapshot:
    ref: str
    commit: str
    created: str
    subject: str


def _git(cwd: str, *args: str, check: bool = True) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    done = subprocess.run(
        ["git", *_SAFE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        env=env,
        check=False,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.strip()[:200]}")
    return done.stdout.strip()


def is_work_tree(cwd: str) -> bool:
    """Whether `cwd` lies in a git work tree (found without running git: a `.git` above)."""
    path = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def record(cwd: str, why: str, last: dict[str, str] | None = None) -> Snapshot | None:
    """Record the work tree's uncommitted changes under a write-guard ref; None when clean, or
    when they are what `last` (cwd → the trees of the last snapshot, kept by the caller) says
    was recorded last: one ref per state, not one per command."""
    if not is_work_tree(cwd):
        return None
    commit = _git(cwd, "stash", "create", f"write-guard: before {why[:60]}", check=False)
    if not commit:
        return None
    if last is not None:
        trees = _git(cwd, "rev-parse", f"{commit}^{{tree}}", f"{commit}^2^{{tree}}", check=False)
        if last.get(cwd) == trees:
            return None
        last[cwd] = trees
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    ref = f"{REF_PREFIX}{stamp}-{commit[:12]}"
    _git(cwd, "update-ref", "-m", "write-guard snapshot", ref, commit)
    return Snapshot(ref=ref, commit=commit, created=stamp, subject=why)


def snapshots(cwd: str) -> list[Snapshot]:
    """Every recorded snapshot of the repository at `cwd`, newest first."""
    out = _git(
        cwd,
        "for-each-ref",
        "--sort=-refname",
        "--format=%(refname)%00%(objectname)%00%(contents:subject)",
        REF_PREFIX,
    )
    found: list[Snapshot] = []
    for line in out.splitlines():
        ref, commit, subject = [*line.split("\0"), "", ""][:3]
        created = ref[len(REF_PREFIX) :].split("-", 1)[0]
        found.append(Snapshot(ref=ref, commit=commit, created=created, subject=subject))
    return found


def restore(cwd: str, which: str) -> Snapshot:
    """Bring back a snapshot (a ref, its suffix, or a commit prefix) into the work tree.

    `git stash apply` merges the recorded changes into the current tree; it refuses when
    that would overwrite changes made since, which then stay as they are."""
    for snap in snapshots(cwd):
        if which in {snap.ref, snap.ref[len(REF_PREFIX) :]} or snap.commit.startswith(which):
            _git(cwd, "stash", "apply", snap.commit)
            return snap
    raise LookupError(f"no write-guard snapshot matches {which!r}")
