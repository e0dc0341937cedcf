"""Recoverable git work: the dirty state of a work tree recorded before a shell command runs.

`git stash create` writes a stash commit of the tracked changes (work tree and index) without
touching either. The untracked files (not the ignored ones) are added the way `git stash -u`
keeps them: a third parent, a commit of their tree, written through a temporary index file, so
that neither the work tree, the index nor the stash list changes. A ref under
`refs/write-guard/` keeps the commit from garbage collection. What the git gate cannot see (a
script that runs `git reset --hard` or `git clean -fdx`) can then be undone with
`hookchain restore` (`git stash apply`, which brings the untracked files back too).

Untracked files are bounded: a file over `UNTRACKED_FILE_MAX` bytes, those past
`UNTRACKED_TOTAL_MAX` bytes in all or past `UNTRACKED_FILES_MAX` files are left out (a build
output or a data dump the agent made; hashing it before every command would cost more than it
saves), and the snapshot's subject says how many were."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

REF_PREFIX = "refs/write-guard/snapshots/"
GIT_TIMEOUT_S = 10.0
UNTRACKED_FILE_MAX = 4 * 1024 * 1024
UNTRACKED_TOTAL_MAX = 32 * 1024 * 1024
UNTRACKED_FILES_MAX = 2_000
# The host runs git on the agent's work tree: no program of the repository's configuration.
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat")


@dataclass(frozen=True, slots=True)
class Snapshot:
    ref: str
    commit: str
    created: str
    subject: str


def _git(
    cwd: str, *args: str, check: bool = True, index: str | None = None, stdin: str | None = None
) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    done = subprocess.run(
        ["git", *_SAFE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        env=env,
        check=False,
        input=stdin,
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


def untracked(top: str, index: str | None = None) -> tuple[list[str], int]:
    """The untracked, not ignored files below the work tree's top folder that fit the caps
    (paths relative to it), and how many were left out; `index`: the index file to read."""
    listed = _git(top, "ls-files", "-z", "--others", "--exclude-standard", "--", ".", index=index)
    kept: list[str] = []
    left_out = 0
    total = 0
    for name in listed.split("\0"):
        # A folder (`name/`) is a repository of its own inside this one: not this one's work.
        if not name or name.endswith("/"):
            continue
        try:
            size = os.lstat(os.path.join(top, name)).st_size
        except OSError:
            continue
        if (
            size > UNTRACKED_FILE_MAX
            or total + size > UNTRACKED_TOTAL_MAX
            or len(kept) >= UNTRACKED_FILES_MAX
        ):
            left_out += 1
            continue
        total += size
        kept.append(name)
    return kept, left_out


def _untracked_commit(top: str, names: list[str]) -> tuple[str, str]:
    """A parentless commit of `names`' tree (as `git stash -u` keeps them), written through a
    temporary index file; and that tree."""
    with tempfile.TemporaryDirectory(prefix="write-guard-index-") as scratch:
        index = os.path.join(scratch, "index")
        _git(top, "update-index", "--add", "-z", "--stdin", index=index, stdin="\0".join(names))
        tree = _git(top, "write-tree", index=index)
    return _git(top, "commit-tree", tree, "-m", "untracked files"), tree


def record(cwd: str, why: str, last: dict[str, str] | None = None) -> Snapshot | None:
    """Record the work tree's uncommitted changes, untracked files included, under a
    write-guard ref; None when clean, or when they are what `last` (cwd → the trees of the last
    snapshot, kept by the caller) says was recorded last: one ref per state, not one per
    command."""
    if not is_work_tree(cwd):
        return None
    subject = f"write-guard: before {why[:60]}"
    located = _git(cwd, "rev-parse", "--show-toplevel", "--git-path", "index", check=False)
    head = _git(cwd, "rev-parse", "--verify", "-q", "HEAD", check=False)
    if len(located.splitlines()) != 2 or not head:
        return None  # no commit yet: nothing a stash could be applied onto
    top, index = located.splitlines()[0], os.path.join(cwd, located.splitlines()[1])
    with tempfile.TemporaryDirectory(prefix="write-guard-index-") as scratch:
        # A copy of the index: the real one is neither locked nor rewritten (and an
        # `index.lock` a command left behind cannot make the snapshot fail).
        copy = os.path.join(scratch, "index")
        try:
            shutil.copyfile(index, copy)
        except FileNotFoundError:
            _git(top, "read-tree", head, index=copy)
        commit = _git(cwd, "stash", "create", subject, check=False, index=copy)
        names, left_out = untracked(top, copy)
    if not commit and not names:
        return None
    if left_out:
        subject += f" ({left_out} untracked files over the size cap not kept)"
    if not commit:
        # Only untracked files: the work tree and index commits are HEAD's tree.
        tree = _git(cwd, "rev-parse", f"{head}^{{tree}}")
        index_commit = _git(cwd, "commit-tree", tree, "-p", head, "-m", "index")
        work, index_tree = tree, tree
    else:
        work, index_commit, index_tree = (
            _git(cwd, "rev-parse", f"{commit}^{{tree}}", f"{commit}^2", f"{commit}^2^{{tree}}")
            .split("\n")
        )  # fmt: skip
    untracked_tree = ""
    if names:
        untracked_commit, untracked_tree = _untracked_commit(top, names)
        parents = ["-p", head, "-p", index_commit, "-p", untracked_commit]
        commit = _git(cwd, "commit-tree", work, *parents, "-m", subject)
    if last is not None:
        trees = f"{work} {index_tree} {untracked_tree}"
        if last.get(cwd) == trees:
            return None
        last[cwd] = trees
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    ref = f"{REF_PREFIX}{stamp}-{commit[:12]}"
    _git(cwd, "update-ref", "-m", "write-guard snapshot", ref, commit)
    return Snapshot(ref=ref, commit=commit, created=stamp, subject=subject)


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


@dataclass(frozen=True, slots=True)
class Restored:
    snapshot: Snapshot
    untracked: tuple[str, ...]
    """Untracked files put back."""
    kept: tuple[str, ...]
    """Untracked files of the snapshot that exist again (made since): left as they are."""


def restore(cwd: str, which: str) -> Restored:
    """Bring back a snapshot (a ref, its suffix, or a commit prefix) into the work tree.

    The tracked changes: `git stash apply` merges them into the current tree; it refuses when
    that would overwrite changes made since, which then stay as they are. The untracked files
    that are missing come back (through a temporary index: the index is not touched); one that
    exists again is left as it is and named."""
    for snap in snapshots(cwd):
        if which in {snap.ref, snap.ref[len(REF_PREFIX) :]} or snap.commit.startswith(which):
            return _apply(cwd, snap)
    raise LookupError(f"no write-guard snapshot matches {which!r}")


def _apply(cwd: str, snap: Snapshot) -> Restored:
    commit = snap.commit
    top = _git(cwd, "rev-parse", "--show-toplevel")
    trees = _git(cwd, "rev-parse", f"{commit}^{{tree}}", f"{commit}^1^{{tree}}",
                 f"{commit}^2^{{tree}}").split("\n")  # fmt: skip
    untracked_commit = _git(cwd, "rev-parse", "--verify", "-q", f"{commit}^3", check=False)
    if len(set(trees)) > 1:
        tracked = commit
        if untracked_commit:
            # The same stash without its untracked parent: those files are put back below,
            # one by one, rather than refused all together when one of them exists again.
            tracked = _git(cwd, "commit-tree", trees[0], "-p", f"{commit}^1", "-p",
                           f"{commit}^2", "-m", snap.subject)  # fmt: skip
        _git(cwd, "stash", "apply", tracked)
    back: list[str] = []
    kept: list[str] = []
    if untracked_commit:
        names = _git(top, "ls-tree", "-r", "-z", "--name-only", untracked_commit).split("\0")
        for name in filter(None, names):
            (kept if os.path.lexists(os.path.join(top, name)) else back).append(name)
        if back:
            with tempfile.TemporaryDirectory(prefix="write-guard-index-") as scratch:
                index = os.path.join(scratch, "index")
                _git(top, "read-tree", untracked_commit, index=index)
                _git(top, "checkout-index", "-z", "--stdin", index=index, stdin="\0".join(back))
    return Restored(snapshot=snap, untracked=tuple(back), kept=tuple(kept))
