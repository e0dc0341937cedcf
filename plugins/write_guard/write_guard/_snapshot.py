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
saves), and the snapshot's subject says how many were.

The objects of a snapshot live in the repository's `.git/objects`, which a command may delete
(everything in `.git` but its config, hooks and write-guard's refs stays writable so that
`git commit` works). So each snapshot is also copied into a store of write-guard's own: a bare
repository per repository in hookchain's data dir (hidden from the sandbox, never writable by
a command), written incrementally with `git pack-objects` piped into the store's
`git index-pack --strict` (every object hashed again) — only what the store lacks, the
objects reachable from the snapshot and not from the store's last tips. HEAD is kept there too
(its branch under the same name, the first time every branch and tag): a commit seen at HEAD
is recoverable, with its history, even from a clean work tree. `recover` brings the store's
objects and refs back into a repository that lost them; `restore` runs it first."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass

from framework import data_dir

from write_guard._bash import analyse_bash
from write_guard._fallback import _assignment
from write_guard._gitdir import commondir_target, gitfile_target, linked_gitfile
from write_guard._quick import writes_nothing
from write_guard._sandbox import git_dirs

PREFIX = "refs/write-guard/"
REF_PREFIX = PREFIX + "snapshots/"
GIT_TIMEOUT_S = 10.0
UNTRACKED_FILE_MAX = 4 * 1024 * 1024
UNTRACKED_TOTAL_MAX = 32 * 1024 * 1024
UNTRACKED_FILES_MAX = 2_000
# The store: one bare repository per repository (by its git dir's real path and its id, see
# `store_of`) below `<data dir>/write-guard/git/`. Its first copy holds every object of the
# repository's branches and tags (a few tenths of a second on 10,000 files); it may take this
# long in the background (the snapshot's own budget abandons it, not git), and a second copy
# into the same store waits for none: it is left to the next snapshot (a lock younger than
# STORE_LOCK_STALE_S: a copy runs a few git processes in turn, each bounded by this).
STORE_FOLDER = ("write-guard", "git")
STORE_TIMEOUT_S = 120.0
STORE_LOCK_STALE_S = 6 * STORE_TIMEOUT_S
# A copy that failed is tried again only after this, doubled at each failure up to an hour:
# a first copy that never finishes in time would otherwise cost its full time at every
# command. `FAILED_FILE` in the store counts the failures (removed by a copy that succeeds).
STORE_RETRY_S = 60.0
FAILED_FILE = "write-guard.failed"
# The branches (at their commits) the store refused last (`a/b` when it keeps `a`).
CLASH_FILE = "write-guard.clash"
# More packs than this in a store (one per snapshot): the small ones are rolled into one
# (`repack --geometric`, whose work grows with the small packs, not with the store).
STORE_PACKS_MAX = 24
# Snapshots pruned since the last full repack (`PRUNED_FILE` says so): their objects leave
# the store at the next full repack (`repack -a -d`, whose work grows with the store), made
# in place of a geometric one once the packs weigh this many times what the last full one
# left (`PACKED_FILE`): the objects no snapshot holds any longer stay under that bound.
PRUNED_FILE = "write-guard.pruned"
PACKED_FILE = "write-guard.packed"
RECLAIM_GROWTH = 2
_SNAPSHOT_NAME = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{12}")
HEAD_REF = PREFIX + "head"
# A linked work tree's own (see `WorkTree`): its snapshots and its record of HEAD.
WORKTREES_PREFIX = PREFIX + "worktrees/"
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
# The trees of the last snapshot copied (work tree, index, untracked files).
TREES_FILE = "write-guard.trees"
_HEX = frozenset("0123456789abcdef")
# The host runs git on the agent's work tree: no program of the repository's configuration.
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
         "-c", "core.commitGraph=false", "-c", "advice.graftFileDeprecated=false")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Snapshot:
    ref: str
    commit: str
    created: str
    subject: str
    unstored: str = ""
    """Why write-guard's store does not hold it (kept in the repository only; offered to the
    store again at the next snapshot); "" when copied."""

    @property
    def name(self) -> str:
        """What `hookchain restore` lists and takes: `<time>-<commit>`."""
        return self.ref.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class WorkTree:
    """Where one work tree of a repository keeps its own, in the repository and in the store
    (the objects and branches are the repository's, shared): its snapshots, its record of
    HEAD (a ref of the store) and the branch HEAD was on (a file of the store). Two work
    trees (`git worktree add`) are on two branches, with two states: the main work tree keeps
    the names it always had, a linked one names them after its entry under `worktrees/`
    (kept by `git worktree move`)."""

    key: str = ""
    """"" for the main work tree."""

    @property
    def prefix(self) -> str:
        """Its snapshot refs' folder."""
        return f"{WORKTREES_PREFIX}{self.key}/snapshots/" if self.key else REF_PREFIX

    @property
    def head_ref(self) -> str:
        return f"{WORKTREES_PREFIX}{self.key}/head" if self.key else HEAD_REF

    def head_file(self, store: str) -> str:
        """The store's file naming what its HEAD was on (the store's own HEAD for the main
        work tree)."""
        return os.path.join(store, f"write-guard.head.{self.key}" if self.key else "HEAD")


def work_tree(git_dir: str, common: str) -> WorkTree:
    """The work tree whose git dir is `git_dir` (see `WorkTree`)."""
    real = os.path.realpath(git_dir)
    if real == os.path.realpath(common):
        return WorkTree()
    name = os.path.basename(real)
    # git makes the names valid in a ref; one it did not is hashed rather than trusted.
    if not _KEY.fullmatch(name) or ".." in name or name.endswith((".", ".lock")):
        name = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    return WorkTree(name)


def _is_head_record(ref: str) -> bool:
    """One of the store's records of a work tree's HEAD (never made in the repository)."""
    return ref == HEAD_REF or (ref.startswith(WORKTREES_PREFIX) and ref.endswith("/head"))


# What names a repository other than the `.git` found from the folder: git would read and
# write the repository they name whatever folder it runs in (the host's environment holds one
# when it was started from inside git, a hook or `rebase -x`).
_LOCATION_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
                 "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
                 "GIT_SHALLOW_FILE", "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE")  # fmt: skip


# The newest snapshots of a work tree kept, and their age limit (options `snapshots_kept`,
# `snapshots_max_age_days`): a month of work, which a loss is noticed well within, bounded
# for a session recording hundreds of states a day.
SNAPSHOTS_KEPT = 100
SNAPSHOTS_MAX_AGE_S = 30 * 86_400.0


@dataclass(frozen=True, slots=True)
class Retention:
    """How many snapshots of a work tree its repository and the store keep: the newest
    `kept`, and none older than `max_age_s` (0: no age limit). Applied when a snapshot is
    recorded, never to the one just taken."""

    kept: int = SNAPSHOTS_KEPT
    max_age_s: float = SNAPSHOTS_MAX_AGE_S


def _now() -> float:
    return time.time()


def _env() -> dict[str, str]:
    # A command can write `.git/refs/replace`, `.git/info/grafts` and the commit-graph: none of
    # them may change what a snapshot holds or what comes back.
    env = {key: value for key, value in os.environ.items() if key not in _LOCATION_ENV}
    # A snapshot's commits are write-guard's own records: they need no identity of the person's,
    # and a machine without one (no user.email, or user.useConfigOnly) must still record.
    return {**_IDENTITY, **env, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1", "GIT_GRAFT_FILE": os.devnull}  # fmt: skip


_IDENTITY = {
    "GIT_AUTHOR_NAME": "write-guard",
    "GIT_AUTHOR_EMAIL": "write-guard@localhost",
    "GIT_COMMITTER_NAME": "write-guard",
    "GIT_COMMITTER_EMAIL": "write-guard@localhost",
}


def _git(
    cwd: str,
    *args: str,
    check: bool = True,
    index: str | None = None,
    stdin: str | None = None,
    alternate: str | None = None,
    timeout: float = GIT_TIMEOUT_S,
    ceiling: str | None = None,
) -> str:
    env = _env()
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    if alternate is not None:
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = alternate
    if ceiling is not None and os.path.dirname(ceiling) != ceiling:
        env["GIT_CEILING_DIRECTORIES"] = os.path.dirname(ceiling)
    done = subprocess.run(
        ["git", *_SAFE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
        input=stdin,
    )
    if check and done.returncode != 0:
        name = next((arg for arg in args if not arg.startswith("-")), "")
        raise RuntimeError(f"git {name} failed: {done.stderr.strip()[:200]}")
    return done.stdout.strip()


def holder(cwd: str) -> str:
    """The nearest folder at or above `cwd` holding a `.git` (found without running git), or
    "". git is told to look no higher (`GIT_CEILING_DIRECTORIES`): when this repository is
    broken, git's own search would walk on to a repository around it (a project in a
    monorepo, or in a home folder kept in git) and write-guard would read and write that one."""
    path = os.path.abspath(cwd)
    while not os.path.lexists(os.path.join(path, ".git")):
        parent = os.path.dirname(path)
        if parent == path:
            return ""
        path = parent
    return path


# Programs that write no file whatever their options and inputs (and shell keywords whose
# words are only a list): a line of these alone, with nothing the analysis reads as a write,
# needs no snapshot. Any other program may write the work tree through its own options or
# inputs, which the line analysis does not read and the sandbox lets it do inside the roots
# (`sort -o`, `zip -m`, `gzip`, awk's `print >`, `openssl -out`, a build or test tool).
_READERS = frozenset({
    "ls", "cat", "head", "tail", "grep", "egrep", "fgrep", "wc", "echo", "printf", "pwd",
    "true", "false", "test", "[", "which", "type", "stat", "du", "df", "diff", "cmp",
    "basename", "dirname", "realpath", "readlink", "sleep", "seq", "cut", "tr", "nl", "date",
    "uname", "id", "whoami", "hostname", "cd", "export", ":", "for",
})  # fmt: skip


def writes_no_file(command: str) -> bool:
    """Whether a shell line provably writes no file, so that no snapshot is needed before it:
    the analysis finds no target, git call or doubt (`writes_nothing`), and every program it
    runs is one of `_READERS`, named bare (a path may name any program: `./ls`)."""
    if not writes_nothing(command):
        return False
    for argv in analyse_bash(command).programs:
        words = [word for word in argv if not _assignment(word)]
        if words and words[0] not in _READERS:
            return False
    return True


def own_git_dir(folder: str) -> str:
    """The git dir `folder/.git` is or names, when write-guard follows it; else "".

    A command can write a `.git` into any folder it writes, naming any repository (one outside
    the roots, which it could not otherwise touch): git would take the folder for a work tree
    of that repository, and the snapshot (objects, a ref) and its store copy would go there,
    with the person's rights. So a `.git` is followed only where the repository names the
    folder back, as git itself writes it for the work trees it makes, and only the repository
    named could make it so:
    - a `.git` folder: the repository's own;
    - a `.git` file (a gitfile, read by `gitfile_target`): its git dir's `gitdir` names this
      `.git` file (a linked work tree: `git worktree add` writes it), or, without one, its
      `core.worktree` names this folder (a submodule's git dir under `.git/modules`; a
      repository made with `--separate-git-dir` has neither, and is followed once the person
      sets `core.worktree`);
    - a git dir with a `commondir` must be one of that common dir's `worktrees/` (else the
      refs and objects written are another repository's);
    - `.git` itself is no symlink (a snapshot refuses one in the folders it writes into too:
      `_symlinked`; `recover` says which).
    A gitfile the repository never wrote names it in one direction only, and is refused
    rather than guessed at."""
    dot_git = os.path.join(folder, ".git")
    if os.path.islink(dot_git):
        return ""
    if os.path.isdir(dot_git):
        git_dir = dot_git
    else:
        target = gitfile_target(dot_git)
        if target is None or not os.path.isdir(target) or not _names_back(target, folder):
            return ""
        git_dir = target
    common = commondir_target(git_dir)
    if common is None:
        common = git_dir
    elif os.path.dirname(os.path.realpath(git_dir)) != os.path.join(
        os.path.realpath(common), "worktrees"
    ):
        return ""
    return git_dir


def _names_back(git_dir: str, folder: str) -> bool:
    """Whether the git dir a gitfile in `folder` names names that folder back (see
    `own_git_dir`)."""
    back = linked_gitfile(git_dir)
    if back is not None:
        return os.path.realpath(back) == os.path.realpath(os.path.join(folder, ".git"))
    # Only its own config (no include is followed), read by git.
    worktree = _git(git_dir, "config", "--file", os.path.join(git_dir, "config"), "--get",
                    "core.worktree", check=False, ceiling=git_dir)  # fmt: skip
    if not worktree:
        return False
    return os.path.realpath(os.path.join(git_dir, worktree)) == os.path.realpath(folder)


def is_work_tree(cwd: str) -> bool:
    """Whether `cwd` lies in a git work tree (found without running git: a `.git` above)."""
    return bool(holder(cwd))


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


def record(
    cwd: str, why: str, last: dict[str, str] | None = None, retention: Retention = Retention()
) -> Snapshot | None:
    """Record the work tree's uncommitted changes, untracked files included, under a
    write-guard ref; None when clean, or when they are what `last` (cwd → the trees of the last
    snapshot, kept by the caller) says was recorded last: one ref per state, not one per
    command. The work tree's snapshots past `retention` go, from the repository and the
    store, with the same git calls that add this one."""
    found = holder(cwd)
    git_dir = own_git_dir(found) if found else ""
    if not git_dir or _symlinked(git_dir, commondir_target(git_dir) or git_dir):
        # A `.git` a command could have planted, naming another repository, or a symlink
        # on the way to what is written (see `own_git_dir`). Refused rather than guessed: a
        # work tree whose `.git` the person made a symlink is not snapshotted either.
        return None
    subject = f"write-guard: before {why[:60]}"
    # One git for all five (each process counts: this runs before every shell command).
    asked = ("--show-toplevel", "--git-path", "index", "--git-dir", "--git-common-dir")
    located = _git(cwd, "rev-parse", *asked, "--verify", "-q", "HEAD", check=False,
                   ceiling=found).splitlines()  # fmt: skip
    if len(located) != 5:
        return None  # no commit yet: nothing a stash could be applied onto
    top, head = located[0], located[4]
    index, git_dir, common = (os.path.join(cwd, path) for path in located[1:4])
    store = store_of(common, make=True)
    where = work_tree(git_dir, common)
    kept, branch = _head_updates(store, git_dir, head, where) if store else ({}, "")
    with tempfile.TemporaryDirectory(prefix="write-guard-index-") as scratch:
        # A copy of the index: the real one is neither locked nor rewritten (and an
        # `index.lock` a command left behind cannot make the snapshot fail). With its time:
        # git trusts an entry's stat data only when the entry is older than the index file,
        # and a file changed in the same second as the index was written (same size) would
        # look unchanged to a copy made a second later.
        copy = os.path.join(scratch, "index")
        try:
            shutil.copy2(index, copy)
        except FileNotFoundError:
            _git(top, "read-tree", head, index=copy)
        commit = _git(cwd, "stash", "create", subject, check=False, index=copy)
        names, left_out = untracked(top, copy)
    if not commit and not names:
        with contextlib.suppress(_BackingOff):  # said with the last snapshot
            _keep(top, store, kept, branch, where)
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
    trees = f"{work} {index_tree} {untracked_tree}"
    if last is not None and last.get(cwd) == trees:
        with contextlib.suppress(_BackingOff):
            _keep(top, store, kept, branch, where)
        return None
    now = _now()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    ref = f"{where.prefix}{stamp}-{commit[:12]}"
    pruned = _pruned(common, store, where.prefix, retention, now, ref)
    missed = _unstored(common, store, where.prefix) if store else {}
    missed = {name: sha for name, sha in missed.items() if name not in pruned}
    _add_ref(cwd, ref, commit, pruned)
    if not store:
        why = f"{os.path.join(common, ID_FILE)} could not be made or is not write-guard's"
        return Snapshot(ref=ref, commit=commit, created=stamp, subject=subject, unstored=why)
    # In the repository first: a store that cannot be written loses no snapshot, and the
    # snapshots it missed are offered to it again with this one.
    made = (work, index_tree, untracked_tree)
    updates = {**missed, **kept, ref: commit}
    unstored = _keep_or_why(top, store, updates, branch, where, made, pruned, retention)
    if unstored and missed and not unstored.startswith(_BACKING_OFF):
        # One of those missed may have lost its objects since: not worth losing this one.
        updates = {**kept, ref: commit}
        unstored = _keep_or_why(top, store, updates, branch, where, made, pruned, retention, True)
    if last is not None and not unstored:
        last[cwd] = trees  # only once copied: until then the same state is offered again
    return Snapshot(ref=ref, commit=commit, created=stamp, subject=subject, unstored=unstored)


def _pruned(
    common: str, store: str, prefix: str, retention: Retention, now: float, taken: str
) -> list[str]:
    """The work tree's snapshot refs past `retention`, in the repository (its loose refs) or
    the store: those after the newest `kept` (the one just `taken` first among them), and
    those older than the age limit. Two folder reads, no git."""
    names: set[str] = set()
    for base in (common, store) if store else (common,):
        with contextlib.suppress(OSError):
            names.update(os.listdir(os.path.join(base, prefix)))
    names.discard(taken[len(prefix) :])
    # Newest first: a name starts with the UTC second it was taken.
    ordered = sorted((name for name in names if _SNAPSHOT_NAME.fullmatch(name)), reverse=True)
    dropped = ordered[retention.kept - 1 :]
    if retention.max_age_s > 0:
        oldest = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now - retention.max_age_s))
        dropped += [name for name in ordered[: retention.kept - 1] if name[:15] < oldest]
    return [prefix + name for name in dropped]


def _add_ref(cwd: str, ref: str, commit: str, pruned: list[str]) -> None:
    """Set the snapshot's ref in the repository and delete the `pruned` ones, in one git; the
    ref alone when that fails (a ref locked meanwhile): the snapshot first."""
    lines = f"update {ref} {commit}\n" + "".join(f"delete {old}\n" for old in pruned)
    try:
        _git(cwd, "update-ref", "-m", "write-guard snapshot", "--stdin", stdin=lines)
    except RuntimeError:
        if not pruned:
            raise
        _git(cwd, "update-ref", "-m", "write-guard snapshot", ref, commit)


def _unstored(common: str, store: str, prefix: str) -> dict[str, str]:
    """The repository's snapshot refs below `prefix` (the loose ones: `update-ref` writes them
    so) that the store lacks: those a store that could not be written missed. Two folder
    reads."""
    try:
        names = os.listdir(os.path.join(common, prefix))
    except OSError:
        return {}  # no snapshot
    try:
        have = set(os.listdir(os.path.join(store, prefix)))
    except OSError:
        have = set()  # none copied yet
    found = {prefix + name: _read_ref(common, prefix + name) for name in names}
    return {ref: sha for ref, sha in found.items() if sha and ref[len(prefix) :] not in have}


def _keep_or_why(
    top: str,
    store: str,
    updates: dict[str, str],
    branch: str,
    tree: WorkTree,
    trees: tuple[str, ...],
    pruned: list[str],
    retention: Retention,
    force: bool = False,
) -> str:
    """`_keep`, and why the store does not hold the snapshot ("" when it does)."""
    try:
        if _keep(top, store, updates, branch, tree, trees, force, pruned, retention):
            return ""
        return "another copy into write-guard's store is under way"
    except _BackingOff as error:
        return str(error)
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        return f"write-guard's store could not be written: {type(error).__name__}: {error}"[:300]


# The repository's id, in the folder of write-guard's refs: git reads no name starting with
# a dot as a ref (nor packs, lists or removes it).
ID_FILE = PREFIX + ".id"


def _path_key(common: str) -> str:
    return hashlib.sha256(os.path.realpath(common).encode()).hexdigest()[:24]


def store_of(common: str, make: bool = False) -> str:
    """The path of write-guard's store for the repository whose (common) git dir is
    `common`, the same for all of its work trees; "" when the repository has no id (it was
    never recorded: `make` gives it one).

    By path and id: a repository deleted and made again at the same path (`rm -rf .git`,
    `git init`, or a new clone) is another repository, and is offered nothing of the store
    of the one before. Its root commits would not tell them apart when it matters most: once
    a command deleted the objects there is no root commit to read, and a new `git init` has
    none yet. The id is a random one written at the first record into `refs/write-guard/`,
    which the sandbox keeps read-only: a command that empties `.git` (and runs `git init`
    there) leaves it, so the repository it emptied is still the one its store belongs to;
    a person who deletes the repository deletes it too."""
    found = _read_id(common)
    if not found and make:
        found = _make_id(common)
    if not found:
        return ""
    return os.path.join(data_dir(), *STORE_FOLDER, f"{_path_key(common)}-{found}.git")


def other_stores(common: str) -> list[str]:
    """The stores write-guard keeps for this path that are not this repository's: those of
    repositories deleted and made again here, and one from before repositories had ids."""
    folder = os.path.join(data_dir(), *STORE_FOLDER)
    key, own = _path_key(common), os.path.basename(store_of(common))
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    ours = [name for name in names if name == f"{key}.git" or name.startswith(f"{key}-")]
    return sorted(os.path.join(folder, name) for name in ours if name != own)


def _read_id(common: str) -> str:
    try:
        with open(os.path.join(common, ID_FILE), encoding="ascii") as handle:
            found = handle.read(100).strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return found if len(found) == 32 and set(found) <= _HEX else ""


def _make_id(common: str) -> str:
    """A new id for the repository (another process's, made meanwhile, when it won); the
    store it had before ids, when its refs show it was recorded then, becomes this id's."""
    folder = os.path.join(common, PREFIX)
    path = os.path.join(common, ID_FILE)
    legacy = os.path.join(data_dir(), *STORE_FOLDER, f"{_path_key(common)}.git")
    try:
        recorded_before = bool(os.listdir(os.path.join(common, REF_PREFIX)))
    except OSError:
        recorded_before = False
    new = uuid.uuid4().hex
    try:
        os.makedirs(folder, exist_ok=True)
        made = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return _read_id(common)
    except OSError:
        return ""
    with os.fdopen(made, "w", encoding="ascii") as handle:
        handle.write(new + "\n")
    if recorded_before and os.path.isdir(legacy):
        # Its snapshot refs, which only the host writes, show the store of before is its own.
        with contextlib.suppress(OSError):
            os.rename(
                legacy, os.path.join(os.path.dirname(legacy), f"{_path_key(common)}-{new}.git")
            )
    return new


def _has_store(store: str) -> bool:
    return bool(store) and os.path.isdir(os.path.join(store, "objects"))


def _read_shas(path: str) -> list[str]:
    """The object names in a small file of the store's (a loose ref, the last trees); none
    when it is missing or not one."""
    try:
        with open(path, encoding="ascii") as handle:
            words = handle.read(400).split()
    except (OSError, UnicodeDecodeError):
        return []
    return [w for w in words if len(w) in (40, 64) and set(w) <= _HEX] if words else []


def _read_ref(store: str, ref: str) -> str:
    """A loose ref of the store (all of its refs are: only `update-ref` writes them), or ""."""
    found = _read_shas(os.path.join(store, ref))
    return found[0] if len(found) == 1 else ""


def _write_file(path: str, text: str) -> None:
    """`text` into one of the store's own small files, whole or not at all."""
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as handle:
        if handle.read(1024) == text:
            return
    with open(path + ".write-guard", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(path + ".write-guard", path)


def _branch_in(head_file: str) -> str:
    """The branch a HEAD file (the repository's or the store's) is on, or "" (detached,
    unreadable, or a name that would lead out of the refs)."""
    try:
        with open(head_file, encoding="utf-8") as handle:
            symbolic = handle.read(1024).strip()
    except (OSError, UnicodeDecodeError):
        return ""
    branch = symbolic[len("ref: ") :] if symbolic.startswith("ref: refs/heads/") else ""
    return "" if ".." in branch else branch


def _clashed(store: str, branch: str, head: str) -> bool:
    """Whether the store refused `branch` at `head` already (its name clashes with one it
    keeps): not offered again until HEAD or the branch moves."""
    with (
        contextlib.suppress(OSError, UnicodeDecodeError),
        open(os.path.join(store, CLASH_FILE), encoding="utf-8") as handle,
    ):
        return f"{branch} {head}" in handle.read(4096).splitlines()
    return False


def _head_updates(
    store: str, git_dir: str, head: str, tree: WorkTree
) -> tuple[dict[str, str], str]:
    """The store's refs that the work tree's HEAD has moved past (its own record of HEAD and
    the branch HEAD is on), and that branch. Three small reads when nothing moved (every
    command of a clean tree)."""
    updates: dict[str, str] = {}
    if _read_ref(store, tree.head_ref) != head:
        updates[tree.head_ref] = head
    branch = _branch_in(os.path.join(git_dir, "HEAD"))
    if branch and _read_ref(store, branch) != head and not _clashed(store, branch, head):
        updates[branch] = head
    return updates, branch


def _tips(store: str, tree: WorkTree) -> list[str]:
    """Commits whose history the store holds whole: the work tree's HEAD record, the
    branches and the work tree's newest snapshot. What a copy leaves out (a subset of them
    would do: more is copied)."""
    refs = [tree.head_ref]
    for folder, _dirs, files in os.walk(os.path.join(store, "refs", "heads")):
        refs += [os.path.relpath(os.path.join(folder, name), store) for name in files]
    try:
        newest = max(os.listdir(os.path.join(store, tree.prefix)), default="")
    except OSError:
        newest = ""
    if newest:
        refs.append(tree.prefix + newest)
    return list(dict.fromkeys(filter(None, (_read_ref(store, ref) for ref in refs))))


def _init_store(store: str, head: str) -> None:
    parent = os.path.dirname(store)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    # Private: it holds the person's uncommitted work.
    os.chmod(os.path.dirname(parent), 0o700)
    # The repository's object format, and refs as files (`_read_ref` reads them), whatever
    # the person's defaults for new repositories say (an older git ignores these settings).
    sha256 = ["--object-format=sha256"] if len(head) == 64 else []
    _git(parent, "-c", "init.defaultObjectFormat=sha1", "-c", "init.defaultRefFormat=files",
         "init", "-q", "--bare", "--template=", *sha256, store)  # fmt: skip


def _keep(
    top: str,
    store: str,
    updates: dict[str, str],
    branch: str,
    tree: WorkTree,
    trees: tuple[str, ...] = (),
    force: bool = False,
    pruned: list[str] | None = None,
    retention: Retention = Retention(),
) -> bool:
    """Copy into the store the objects reachable from `updates`' commits that it lacks (read
    from the repository at `top`, the store as its alternate), then set its refs to them and
    delete the `pruned` ones; the work tree's HEAD file in the store names `branch`, the
    branch its HEAD is on (for `recover`); `trees`: the
    snapshot's (work tree, index, untracked), left out of the next copy. False when another
    copy is under way (nothing copied); `_BackingOff` when copies failed lately (unless
    `force`: a second try right after a failure)."""
    if not updates:
        return True
    if not os.path.isdir(os.path.join(store, "objects")):
        _init_store(store, next(iter(updates.values())))
    failed = os.path.join(store, FAILED_FILE)
    failures = len(_read_lock(failed).split())
    if failures and not force:
        wait = min(STORE_RETRY_S * 2 ** (failures - 1), 3600.0)
        with contextlib.suppress(FileNotFoundError):
            if time.time() - os.stat(failed).st_mtime < wait:
                raise _BackingOff(
                    f"{_BACKING_OFF} {failures} times in a row: "
                    f"tried again {wait:.0f} s after the last failure"
                )
    lock = os.path.join(store, "write-guard.lock")
    mine = _locked(lock)
    if not mine:
        # Another copy is under way (a first copy of a large repository): this snapshot
        # stays in the repository only; HEAD, not yet recorded, is copied by the next one.
        return False
    try:
        if not _read_ref(store, tree.head_ref):
            # The work tree's first copy (or one that never finished): every branch and tag,
            # so that their history is kept too (what the store holds is left out).
            listed = _git(top, "for-each-ref", "--format=%(refname) %(objectname)",
                          "refs/heads", "refs/tags")  # fmt: skip
            updates = {**dict(line.split(" ", 1) for line in listed.splitlines()), **updates}
        try:
            _copy(top, store, updates, tree, trees, pruned or [], retention)
        except (OSError, RuntimeError, subprocess.SubprocessError):
            with contextlib.suppress(OSError):
                _write_file(failed, "x " * (failures + 1))
            raise
        with contextlib.suppress(FileNotFoundError):
            os.remove(failed)
        if branch:
            _write_file(tree.head_file(store), f"ref: {branch}\n")
        elif tree.head_ref in updates:
            # A detached HEAD that moved: `recover` makes it again detached, at its commit.
            _write_file(tree.head_file(store), f"{updates[tree.head_ref]}\n")
        return True
    finally:
        # Only our own: a copier that judged this one dead holds the lock now.
        if _read_lock(lock) == mine:
            with contextlib.suppress(FileNotFoundError):
                os.remove(lock)


_BACKING_OFF = "the copy into write-guard's store failed"


class _BackingOff(RuntimeError):
    """The store's copy failed lately: not tried again yet."""


def _set_refs(store: str, updates: dict[str, str], deleted: list[str]) -> None:
    lines = "".join(f"update {ref} {sha}\n" for ref, sha in updates.items())
    lines += "".join(f"delete {ref}\n" for ref in deleted)
    # With a reflog: every HEAD the store saw stays listed (`git reflog` in the store).
    _git(store, f"--git-dir={store}", "-c", "core.logAllRefUpdates=always", "update-ref",
         "--stdin", stdin=lines)  # fmt: skip


def _locked(lock: str) -> str:
    """The lock's mark when this copy may go on (the lock made, or taken over from a copy
    that died), else ""."""
    mark = f"{os.getpid()} {os.urandom(8).hex()}\n"
    try:
        made = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(made, "w", encoding="ascii") as handle:
            handle.write(mark)
        return mark
    try:
        if time.time() - os.lstat(lock).st_mtime < STORE_LOCK_STALE_S:
            return ""
    except FileNotFoundError:
        return ""  # released this instant: the next snapshot is copied
    _write_file(lock, mark)  # taken over: whole, so the one that died never removes it
    return mark


def _read_lock(lock: str) -> str:
    try:
        with open(lock, encoding="ascii") as handle:
            return handle.read(100)
    except (OSError, UnicodeDecodeError):
        return ""


def _copy(
    top: str,
    store: str,
    updates: dict[str, str],
    tree: WorkTree,
    trees: tuple[str, ...],
    pruned: list[str],
    retention: Retention,
) -> None:
    tips = _tips(store, tree)
    wanted = [sha for sha in dict.fromkeys(updates.values()) if sha not in tips]
    objects = os.path.join(store, "objects")
    if wanted:
        # The last snapshot's trees too: it is no parent of the next one, so without them
        # every file changed since HEAD would be copied again at every snapshot.
        known = [*tips, *_read_shas(os.path.join(store, TREES_FILE))]
        for leave_out in [known, []] if known else [[]]:
            revs = "\n".join([*wanted, "--not", *leave_out]) + "\n"
            try:
                _pack_into(top, store, ["--revs"], revs, strict=True)
                break
            except RuntimeError:
                # One of them not in the store (it never should be): all is copied instead.
                if leave_out:
                    continue
                # Or an object whose content is not what its name says (planted under the
                # name of work about to be written): copied object by object instead.
                _copy_checked(top, store, wanted)
    try:
        _set_refs(store, updates, pruned)
    except RuntimeError:
        # A branch whose name clashes with one the store kept (`a` then `a/b`): the objects
        # are copied; write-guard's own refs are set without the branches.
        ours = {ref: sha for ref, sha in updates.items() if ref.startswith(PREFIX)}
        _set_refs(store, ours, pruned)
        refused = [f"{ref} {sha}" for ref, sha in updates.items() if not ref.startswith(PREFIX)]
        _write_file(os.path.join(store, CLASH_FILE), "\n".join(refused) + "\n")
    if pruned:
        _write_file(os.path.join(store, PRUNED_FILE), "")
    if any(trees):
        _write_file(os.path.join(store, TREES_FILE), " ".join(filter(None, trees)) + "\n")
    packs = [name for name in os.listdir(os.path.join(objects, "pack")) if name.endswith(".pack")]
    if len(packs) > STORE_PACKS_MAX:
        if _reclaimable(store, packs):
            _reclaim(store, retention)
            return
        try:
            _git(store, f"--git-dir={store}", "repack", "-q", "-d", "--geometric=2",
                 timeout=STORE_TIMEOUT_S)  # fmt: skip
        except RuntimeError:
            # A git before 2.32: all in one pack (what the refs and their reflogs reach,
            # which is everything the store was given).
            _git(store, f"--git-dir={store}", "repack", "-q", "-a", "-d",
                 timeout=STORE_TIMEOUT_S)  # fmt: skip


def _reclaimable(store: str, packs: list[str]) -> bool:
    """Whether snapshots were pruned since the last full repack and the packs have grown
    past RECLAIM_GROWTH times what it left (a stat per pack: done only past STORE_PACKS_MAX)."""
    if not os.path.exists(os.path.join(store, PRUNED_FILE)):
        return False
    folder = os.path.join(store, "objects", "pack")
    size = 0
    for name in packs:
        with contextlib.suppress(OSError):
            size += os.stat(os.path.join(folder, name)).st_size
    left = _read_lock(os.path.join(store, PACKED_FILE)).strip()
    return size > RECLAIM_GROWTH * (int(left) if left.isdigit() else 0)


def _reclaim(store: str, retention: Retention) -> None:
    """One pack of what the store's refs (and their reflogs younger than the age limit)
    reach: the objects only pruned snapshots held are dropped."""
    if retention.max_age_s > 0:
        age = f"{int(retention.max_age_s)}.seconds.ago"
        _git(store, f"--git-dir={store}", "reflog", "expire", "--all", f"--expire={age}",
             f"--expire-unreachable={age}", timeout=STORE_TIMEOUT_S)  # fmt: skip
    _git(store, f"--git-dir={store}", "repack", "-q", "-a", "-d", timeout=STORE_TIMEOUT_S)
    folder = os.path.join(store, "objects", "pack")
    size = sum(
        os.stat(os.path.join(folder, name)).st_size
        for name in os.listdir(folder)
        if name.endswith(".pack")
    )
    _write_file(os.path.join(store, PACKED_FILE), f"{size}\n")
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(store, PRUNED_FILE))


def _pack_into(top: str, store: str, how: list[str], stdin: str, strict: bool) -> None:
    """`git pack-objects` in the repository at `top` (the store as its alternate) piped into
    the store's `git index-pack`, which hashes every object again: with `strict`, one whose
    content is not what its name says (or a link to an object neither has) fails loudly
    rather than lands in the store."""
    env = {**_env(), "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(store, "objects")}
    checks = ["--strict"] if strict else []
    with subprocess.Popen(["git", *_SAFE, "pack-objects", *how, "-q", "--stdout"], cwd=top,
                          env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as packer:  # fmt: skip
        assert packer.stdin is not None
        assert packer.stdout is not None
        indexed: subprocess.Popen[bytes] | None = None
        try:
            indexed = subprocess.Popen(
                ["git", *_SAFE, f"--git-dir={store}", "index-pack", "--stdin", *checks],
                cwd=store, env=_env(), stdin=packer.stdout, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE)  # fmt: skip
            packer.stdout.close()
            packer.stdin.write(stdin.encode())
            packer.stdin.close()
            _out, why = indexed.communicate(timeout=STORE_TIMEOUT_S)
            packer.wait(timeout=STORE_TIMEOUT_S)
        except BaseException:
            packer.kill()
            if indexed is not None:
                indexed.kill()
                indexed.wait()
            raise
    if packer.returncode or indexed.returncode:
        raise RuntimeError(f"git index-pack failed: {why.decode(errors='replace')[:200]}")


def _copy_checked(top: str, store: str, wanted: list[str]) -> None:
    """The objects the commits `wanted` reach, copied into the store after each was hashed as the
    repository holds it: a blob whose content there is not what its name says is written
    from the work tree's file instead (the person's content, when it is the named one);
    those that cannot be mended so are not copied, and named."""
    listed = _git(top, "rev-list", "--objects", *wanted, "--",
                  alternate=os.path.join(store, "objects"))  # fmt: skip
    paths: dict[str, str] = {}  # name -> its path in its tree ("" for a commit)
    for line in filter(None, listed.splitlines()):
        name, _space, path = line.partition(" ")
        paths[name] = path
    bad = set(_forged(top, list(paths)))
    files = sorted({paths[name] for name in bad if paths[name]})
    if files:
        env = {**_env(), "GIT_OBJECT_DIRECTORY": os.path.join(store, "objects")}
        subprocess.run(["git", *_SAFE, "hash-object", "-w", "--no-filters", "--stdin-paths"],
                       cwd=top, env=env, input="\n".join(files) + "\n", capture_output=True,
                       text=True, timeout=STORE_TIMEOUT_S, check=False)  # fmt: skip
    good = [name for name in paths if name not in bad]
    _pack_into(top, store, [], "\n".join(good) + "\n", strict=False)
    left = [name for name in bad if _forged(store, [name])]
    if left:
        raise RuntimeError(
            f"{len(left)} objects of the repository are not what their names say "
            f"({', '.join(sorted(left)[:5])}): not copied into write-guard's store"
        )


def _listed(cwd: str, prefix: str, *git_dir: str) -> list[Snapshot]:
    out = _git(
        cwd,
        *git_dir,
        "for-each-ref",
        "--sort=-refname",
        "--format=%(refname)%00%(objectname)%00%(contents:subject)",
        prefix,
    )
    found: list[Snapshot] = []
    for line in out.splitlines():
        ref, commit, subject = [*line.split("\0"), "", ""][:3]
        created = ref[len(prefix) :].split("-", 1)[0]
        found.append(Snapshot(ref=ref, commit=commit, created=created, subject=subject))
    return found


def snapshots(cwd: str) -> list[Snapshot]:
    """Every recorded snapshot of the work tree at `cwd`, newest first: those in its
    repository's refs and those in write-guard's store (all of them, even when the
    repository's objects or refs were deleted); not those of the repository's other work
    trees."""
    top, git_dir, common = locate(cwd)
    store = store_of(common)
    prefix = work_tree(git_dir, common).prefix
    found: dict[str, Snapshot] = {}
    if _has_store(store):
        with contextlib.suppress(RuntimeError):  # then the repository's own list alone
            found = {snap.ref: snap for snap in _listed(store, prefix, f"--git-dir={store}")}
    try:
        for snap in _listed(top, prefix):
            found.setdefault(snap.ref, snap)
    except RuntimeError:
        if not found:
            raise
    return sorted(found.values(), key=lambda snap: snap.ref, reverse=True)


def locate(cwd: str) -> tuple[str, str, str]:
    """The work tree's top folder, its git dir and common git dir; found without git when git
    no longer sees a repository there (its objects, refs or HEAD deleted): the `.git` above."""
    path = holder(cwd)
    if not path:
        raise LookupError(f"no git repository at or above {cwd}")
    if not own_git_dir(path):
        raise LookupError(
            f"{path}/.git names a git dir that does not name this work tree back (a command "
            "may have planted it): write-guard does not follow it; remove it, or run restore "
            "in the repository's own work tree"
        )
    located = _git(cwd, "rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir",
                   check=False, ceiling=path).splitlines()  # fmt: skip
    if len(located) == 3:
        return located[0], os.path.join(cwd, located[1]), os.path.join(cwd, located[2])
    found = git_dirs(path)
    if not found:
        raise LookupError(f"{path}/.git names no git dir")
    return path, found[0], found[-1]


# The folders of the common git dir that `recover` writes into (git does, below them).
_RECOVERED_FOLDERS = ("objects", "objects/pack", "objects/info", "refs", "refs/heads", "refs/tags")


def _stored_head(store: str, tree: WorkTree) -> str:
    """What the work tree's HEAD held when the store saw it last: its branch, when the store
    holds that branch; else the commit the store saw at HEAD, detached (a detached HEAD, or a
    branch the store never held: naming it would leave HEAD on no commit)."""
    branch = _branch_in(tree.head_file(store))
    if branch and _read_ref(store, branch):
        return f"ref: {branch}"
    seen = _read_ref(store, tree.head_ref)
    return seen or "ref: refs/heads/main"


def _symlinked(git_dir: str, common: str) -> list[str]:
    """The git dirs, HEAD and folders written into (by a snapshot and by `recover`) that are
    symlinks: a command may leave one pointing anywhere, and what is written would land there
    (with the person's rights)."""
    paths = [git_dir, common, os.path.join(git_dir, "HEAD")]
    paths += [os.path.join(common, folder) for folder in _RECOVERED_FOLDERS]
    paths += [os.path.join(common, PREFIX), os.path.join(common, REF_PREFIX)]
    return [path for path in dict.fromkeys(paths) if os.path.islink(path.rstrip("/"))]


def _refuse_symlinks(git_dir: str, common: str) -> None:
    """Refuse to write into a repository through a symlink (see `_symlinked`)."""
    linked = _symlinked(git_dir, common)
    if linked:
        raise RuntimeError(
            f"{', '.join(linked)}: a symlink (a command may have left it); nothing was written "
            "through it: remove it (or put the real folder or file back) and run restore again"
        )


@dataclass(frozen=True, slots=True)
class Recovered:
    objects: int
    """Objects copied back from write-guard's store."""
    refs: tuple[str, ...]
    """Refs made again (branches, tags, snapshots): each was missing."""
    head: bool
    """HEAD was missing: made again, on the branch the store saw last (detached at the
    commit it saw at HEAD when it held no such branch)."""
    index: bool
    """The index was missing: read again from HEAD (the work tree is not touched)."""
    absent: tuple[tuple[str, str], ...] = ()
    """Branches and tags the store holds and the repository lacks, not made again (ref,
    commit): the repository is sound, and one may have been deleted on purpose."""
    stored: bool = True
    """write-guard has a store for the repository (none: nothing could be brought back)."""


def recover(cwd: str) -> Recovered:
    """Bring back what write-guard's store holds and the repository at `cwd` lost: its
    objects (all that the store has and the repository lacks); when HEAD was missing or does
    not resolve (its branch deleted), the refs it no longer has (none that exists is moved:
    a branch the person deleted in a sound repository stays deleted); HEAD and the index when
    they are missing. Nothing when the repository lacks nothing."""
    top, git_dir, common = locate(cwd)
    store = store_of(common)
    if not _has_store(store):
        return Recovered(0, (), False, False, stored=False)
    _refuse_symlinks(git_dir, common)
    for folder in _RECOVERED_FOLDERS:
        os.makedirs(os.path.join(common, folder), exist_ok=True)
    head_file = os.path.join(git_dir, "HEAD")
    head = not os.path.lexists(head_file)
    if head:
        symbolic = _stored_head(store, work_tree(git_dir, common))
        # Made, never opened: a file that appeared meanwhile (a symlink) is not followed.
        created = os.open(head_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(created, "w", encoding="utf-8") as handle:
            handle.write(symbolic + "\n")
    stored = _git(store, f"--git-dir={store}", "cat-file", "--batch-all-objects",
                  "--batch-check=%(objectname)")  # fmt: skip
    checked = _git(top, "cat-file", "--batch-check=%(objectname)", stdin=stored + "\n")
    missing = [line.split()[0] for line in checked.splitlines() if line.endswith(" missing")]
    if missing:
        pack = os.path.join(common, "objects", "pack", "pack")
        _git(store, f"--git-dir={store}", "pack-objects", "-q", pack,
             stdin="\n".join(missing) + "\n", timeout=STORE_TIMEOUT_S)  # fmt: skip
    made: list[str] = []
    form = "--format=%(refname) %(objectname)"
    theirs = _git(store, f"--git-dir={store}", "for-each-ref", form).splitlines()
    ours = {line.split(" ", 1)[0] for line in _git(top, "for-each-ref", form).splitlines()}
    wanted = [line.split(" ", 1) for line in theirs if line.split(" ", 1)[0] not in ours]
    wanted = [pair for pair in wanted if not _is_head_record(pair[0])]
    # HEAD on a branch not born yet (`checkout --orphan`, which the store never saw) is a
    # sound repository; HEAD on a branch the store holds and the repository lost is not.
    branch = _branch_in(head_file)
    unborn = bool(branch) and not _read_ref(store, branch)
    broken = not unborn and not _git(top, "rev-parse", "--verify", "-q", "HEAD", check=False)
    if head or broken:
        lines = "".join(f"create {ref} {sha}\n" for ref, sha in wanted)
        try:
            if wanted:
                _git(top, "update-ref", "--stdin", stdin=lines)
            made = [ref for ref, _sha in wanted]
        except RuntimeError:
            # One by one: a ref git did not list (it names an object neither has) stays.
            for ref, sha in wanted:
                with contextlib.suppress(RuntimeError):
                    _git(top, "update-ref", ref, sha, "")
                    made.append(ref)
    index = os.path.join(top, _git(top, "rev-parse", "--git-path", "index"))
    rebuilt = not os.path.exists(index) and bool(
        _git(top, "rev-parse", "--verify", "-q", "HEAD", check=False)
    )
    if rebuilt:
        _git(top, "read-tree", "HEAD")
    absent = tuple(
        (ref, sha) for ref, sha in wanted if ref not in made and not ref.startswith(PREFIX)
    )
    return Recovered(len(missing), tuple(made), head, rebuilt, absent=absent)


@dataclass(frozen=True, slots=True)
class Restored:
    snapshot: Snapshot
    untracked: tuple[str, ...]
    """Untracked files put back."""
    kept: tuple[str, ...]
    """Untracked files of the snapshot that exist again (made since): left as they are."""
    recovered: Recovered
    """What the repository had lost and came back from write-guard's store first."""


def restore(cwd: str, which: str) -> Restored:
    """Bring back a snapshot (a ref, its suffix, or a commit prefix) into the work tree.

    The tracked changes: `git stash apply` merges them into the current tree; it refuses when
    that would overwrite changes made since, which then stay as they are. The untracked files
    that are missing come back (through a temporary index: the index is not touched); one that
    exists again is left as it is and named. What the repository lost of write-guard's store
    is brought back first (see `recover`)."""
    recovered = recover(cwd)
    for snap in snapshots(cwd):
        if which in {snap.ref, snap.name} or snap.commit.startswith(which):
            _trust(cwd, snap.commit)
            return _apply(cwd, snap, recovered)
    raise LookupError(f"no write-guard snapshot matches {which!r}")


def _apply(cwd: str, snap: Snapshot, recovered: Recovered) -> Restored:
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
    return Restored(snapshot=snap, untracked=tuple(back), kept=tuple(kept), recovered=recovered)


def _forged(cwd: str, names: list[str]) -> list[str]:
    """Those of `names` whose content in the repository at `cwd` does not hash to the name
    (an object file a command rewrote), or that it lacks."""
    done = subprocess.run(["git", *_SAFE, "cat-file", "--batch"], cwd=cwd, env=_env(),
                          input=("\n".join(names) + "\n").encode(), capture_output=True,
                          timeout=STORE_TIMEOUT_S, check=False)  # fmt: skip
    out, at, bad = done.stdout, 0, []
    for number, name in enumerate(names):
        end = out.find(b"\n", at)
        header = out[at:end].split() if end >= 0 else []
        if len(header) == 2 and header[0].decode() == name:  # `<name> missing`
            bad.append(name)
            at = end + 1
            continue
        if len(header) != 3 or header[0].decode() != name:
            bad += names[number:]  # the output cut short: none of the rest is vouched for
            break
        size = int(header[2])
        body = out[end + 1 : end + 1 + size]
        digest = hashlib.new("sha1" if len(name) == 40 else "sha256")
        digest.update(header[1] + b" %d\0" % size + body)
        if digest.hexdigest() != name:
            bad.append(name)
        at = end + 1 + size + 1
    return bad


def _trust(cwd: str, commit: str) -> None:
    """Make sure the objects `restore` reads for the snapshot `commit` are the store's: those
    of the repository whose content is not what their name says are put back from the store
    (their loose file removed first, a pack of the store's copy added); refused, naming them,
    when that does not mend them."""
    top, _git_dir, common = locate(cwd)
    store = store_of(common)
    if not _has_store(store) or not _git(
        store, f"--git-dir={store}", "rev-parse", "--verify", "-q", f"{commit}^{{commit}}",
        check=False,
    ):  # fmt: skip
        return  # nothing to check against (the store never got it): the repository's alone
    wanted = [commit] + [f"{commit}^{n}" for n in (1, 2, 3)]
    tips = _git(store, f"--git-dir={store}", "rev-parse", *wanted[:3])
    third = _git(store, f"--git-dir={store}", "rev-parse", "--verify", "-q", wanted[3],
                 check=False)  # fmt: skip
    listed = _git(store, f"--git-dir={store}", "rev-list", "--objects", "--no-walk",
                  *tips.split(), *third.split())  # fmt: skip
    names = list(dict.fromkeys(line.split(" ", 1)[0] for line in listed.splitlines() if line))
    bad = _forged(top, names)
    if not bad:
        return
    objects = os.path.join(common, "objects")
    for name in bad:
        loose = os.path.join(objects, name[:2], name[2:])
        if not os.path.islink(os.path.join(objects, name[:2])):
            with contextlib.suppress(FileNotFoundError):
                os.remove(loose)
    _git(store, f"--git-dir={store}", "pack-objects", "-q", os.path.join(objects, "pack", "pack"),
         stdin="\n".join(bad) + "\n", timeout=STORE_TIMEOUT_S)  # fmt: skip
    still = _forged(top, bad)
    if still:
        raise RuntimeError(
            f"{len(still)} objects of the snapshot in the repository are not what write-guard "
            f"copied ({', '.join(still[:5])}): a command rewrote them; nothing was restored "
            "(remove those objects from .git/objects, then run restore again)"
        )
