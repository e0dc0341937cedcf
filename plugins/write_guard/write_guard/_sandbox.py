"""Run a Bash command inside bubblewrap, built from the policy: the whole filesystem read-only,
the allowed roots writable, the protected paths read-only again inside them (for the roots'
own repositories and for those nested inside them: submodules, nested clones), the host's own
runtime and data folders hidden, a process table and shared memory of its own, and the
session's private temp folder in place of the host's. Every child of the command inherits the
same mounts.

Pure apart from `probe` (one run of bwrap per host), `git_dirs` (reads a `.git` file),
`nested_git_dirs` (a bounded walk of a root, cached) and `session_temp` (makes a folder)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from write_guard._gitdir import (
    GitSurface,
    after_check,
    commondir_target,
    git_surface,
    gitfile_target,
    inside,
    subfolders,
)

SandboxChoice = Literal["auto", "bwrap", "off"]

# What a workspace must never let the command change, relative to each writable root (and to
# each git dir found there): Claude Code's project settings and git's programs and config.
_ROOT_PROTECTED = (".claude", "hookchain.toml", ".hookchain")
_GIT_PROTECTED = ("config", "config.worktree", "hooks")
# Nested repositories are found by a walk of the workspace reading this many levels of folders
# (the root, `a`, `a/b`: `a/b/.git` is found, `a/b/c/.git` is not), at most this many folder
# entries, again after this long or when the root's own entries change; submodules at any
# depth are found from `.gitmodules` and the git dirs under `modules/`.
NESTED_DEPTH = 3
NESTED_ENTRIES_MAX = 20_000
NESTED_TTL_S = 30.0
_NOT_WALKED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox",
                         ".mypy_cache", ".cache", "target", "dist", "build"})  # fmt: skip
_MODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)
# The prefix of the wrapper's own shell variables.
MARKER = "__write_guard_sandbox"
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class SandboxPlan:
    """The mounts of one sandbox: every path absolute and existing when the plan was made."""

    bwrap: str
    writable: tuple[str, ...]
    read_only: tuple[str, ...]
    hidden_dirs: tuple[str, ...] = ()
    hidden_files: tuple[str, ...] = ()
    missing_protected: tuple[str, ...] = ()
    """Protected folders that do not exist in a writable root: mounted as empty read-only
    folders so that the command cannot create them (bwrap leaves the empty mount point)."""
    temp: tuple[str, str] | None = None
    """(the session's own temp folder, the host's temp folder it is mounted on), or None."""
    pinned: tuple[str, ...] = ()
    """Git dirs bound onto themselves (writable): a mount point can be neither moved nor
    removed, so no `.git` of the command's making takes their place (see _gitdir)."""
    git_absent: tuple[str, ...] = ()
    """Files that would redirect git and do not exist: checked after the command."""


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether bubblewrap can run here, and why not."""

    bwrap: str | None
    reason: str


_PROBED: dict[str, Availability] = {}
"""bwrap's verdict per binary, for this process: whether this machine lets it create
namespaces does not change while it runs, and each replayed session opens a host of its own."""


def probe(choice: SandboxChoice, which: str | None = None) -> Availability:
    """Find bwrap and prove it can create its namespaces (one ~5 ms run per process)."""
    if choice == "off":
        return Availability(None, "the sandbox is switched off in the write-guard options")
    path = which or shutil.which("bwrap")
    if path is None:
        return Availability(None, "bubblewrap (bwrap) is not installed")
    known = _PROBED.get(path)
    if known is None:
        known = _PROBED[path] = _run_probe(path)
    return known


def _run_probe(path: str) -> Availability:
    try:
        done = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--", "/bin/true"],
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return Availability(None, f"bwrap cannot run: {type(error).__name__}")
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return Availability(None, f"bwrap cannot create its namespaces: {why[-1] if why else ''}")
    return Availability(path, "bubblewrap")


def git_dirs(root: str) -> list[str]:
    """The git dir of a work tree at `root` and, for a linked work tree, its common dir (a
    `.git` file and `commondir` read as git reads them: `gitfile_target`)."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return [dot_git]
    git_dir = gitfile_target(dot_git)
    if git_dir is None:
        return []
    found = [os.path.normpath(git_dir)]
    common = commondir_target(found[0])
    if common is not None:
        found.append(common)
    return [path for path in found if os.path.isdir(path)]


_NESTED: dict[str, tuple[float, int, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
"""Per root: when it was walked, its own mtime then, and what was found (see below)."""


def nested_git_dirs(root: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The git dirs of the repositories inside `root` other than its own (submodules', nested
    clones'), and their `.git` files (a gitfile names the git dir: rewritten, it would hand
    git a config of the command's making). Bounded (see NESTED_*) and cached per root."""
    try:
        mtime = os.stat(root).st_mtime_ns
    except OSError:
        return (), ()
    now = time.monotonic()
    known = _NESTED.get(root)
    if known is not None and known[1] == mtime and now - known[0] < NESTED_TTL_S:
        return known[2]
    found = _find_nested(root)
    _NESTED[root] = (now, mtime, found)
    return found


@dataclass(frozen=True, slots=True)
class Walk:
    """The work trees a bounded walk found, and whether it read every folder below."""

    work_trees: tuple[str, ...]
    complete: bool
    """False when a folder was left unread: below `depth`, past the entries read at most, or
    one that could not be listed."""


def work_trees_below(
    folder: str, depth: int | None, entries_max: int, skip: frozenset[str] = frozenset()
) -> Walk:
    """The folders holding a `.git` entry (work trees, `folder` among them) in `folder` and
    below, reading `depth` levels of folders at most (None: any) and `entries_max` folder
    entries, entering no folder named in `skip`, no `.git` and no link."""
    found: list[str] = []
    level = [folder]
    entries = 0
    complete = True
    levels = 0
    while level:
        if depth is not None and levels == depth:
            return Walk(tuple(found), False)
        levels += 1
        below: list[str] = []
        for path in level:
            try:
                with os.scandir(path) as listing:
                    for entry in listing:
                        entries += 1
                        if entries > entries_max:
                            return Walk(tuple(found), False)
                        if entry.name == ".git":
                            found.append(path)
                        elif entry.name not in skip and entry.is_dir(follow_symlinks=False):
                            below.append(entry.path)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone while walked: nothing there to enter
            except OSError:
                complete = False
        level = below
    return Walk(tuple(found), complete)


def _find_nested(root: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    walked = work_trees_below(root, NESTED_DEPTH, NESTED_ENTRIES_MAX, _NOT_WALKED)
    work_trees = [path for path in walked.work_trees if path != root]
    try:
        with open(os.path.join(root, ".gitmodules"), encoding="utf-8") as handle:
            modules = _MODULE_PATH.findall(handle.read(65_536))
    except (OSError, UnicodeDecodeError):
        modules = []
    for path in modules:
        work_tree = os.path.normpath(os.path.join(root, path))
        if inside(work_tree, [root]) and work_tree != root:
            work_trees.append(work_tree)
    git_dirs_found: list[str] = []
    gitfiles: list[str] = []
    for work_tree in dict.fromkeys(work_trees):
        dot_git = os.path.join(work_tree, ".git")
        if os.path.isfile(dot_git) and not os.path.islink(dot_git):
            gitfiles.append(dot_git)
        git_dirs_found += git_dirs(work_tree)
    for git_dir in [*git_dirs(root), *git_dirs_found]:
        git_dirs_found += module_git_dirs(os.path.join(git_dir, "modules"))
    own = set(git_dirs(root))
    return tuple(d for d in dict.fromkeys(git_dirs_found) if d not in own), tuple(gitfiles)


def module_git_dirs(modules: str, depth: int = 0) -> list[str]:
    """The git dirs below a `modules/` folder: a submodule's name may hold slashes, and a
    submodule's own submodules are below its `modules/`."""
    found: list[str] = []
    if depth > 6:
        return found
    for folder in subfolders(modules):
        if os.path.isfile(os.path.join(folder, "HEAD")):
            found.append(folder)
            found += module_git_dirs(os.path.join(folder, "modules"), depth + 1)
        else:
            found += module_git_dirs(folder, depth + 1)
    return found


def session_temp(host_temp: str, session_id: str) -> str:
    """The session's own temp folder, made private (0700) below a folder of this user's in
    the host's temp folder. OSError when that folder is not safely this user's (another user
    made it, or it is a link): the command is then refused rather than given a shared one."""
    uid = os.getuid()
    parent = os.path.join(host_temp, f"write-guard-{uid}")
    key = hashlib.sha256(session_id.encode()).hexdigest()[:24]
    path = os.path.join(parent, key)
    for folder in (parent, path):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
            raise OSError(f"{folder} is not a folder of this user's: no private temp folder")
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(folder, 0o700)
    return path


def remove_session_temp(host_temp: str, session_id: str) -> None:
    """Remove the session's temp folder and everything in it (at the session's end)."""
    key = hashlib.sha256(session_id.encode()).hexdigest()[:24]
    path = os.path.join(host_temp, f"write-guard-{os.getuid()}", key)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)


def _writable_roots(roots: Sequence[str], host_temp: str | None) -> list[str]:
    """The roots that exist, resolved, but the host's temp folder (replaced by the session's)
    and /dev; and the git dirs of linked work trees among them, which hold their objects and
    refs in the main repository's git dir."""
    writable: list[str] = []
    for root in roots:
        real = os.path.realpath(root)
        if real == host_temp:
            continue
        if os.path.exists(real) and real != "/dev" and not real.startswith("/dev/"):
            writable.append(real)
    extra_git: list[str] = []
    for root in list(writable):
        for git_dir in git_dirs(root):
            if not inside(git_dir, writable):
                extra_git.append(git_dir)
    return writable + extra_git


def _repository_git_dirs(writable: Sequence[str]) -> list[str]:
    """The git dirs of the roots' repositories and of those nested in the workspace."""
    found: list[str] = []
    for root in writable:
        found += git_dirs(root)
        if root == writable[0]:
            found += nested_git_dirs(root)[0]
    return list(dict.fromkeys(found))


def redirect_surface(roots: Sequence[str]) -> tuple[GitSurface, tuple[str, ...]]:
    """What redirects git in the roots' repositories (as `plan_sandbox` finds it), and the
    writable roots it was found in: what the host checks again after a command."""
    writable = _writable_roots(roots, None)
    if not writable:
        return GitSurface(), ()
    return git_surface(_repository_git_dirs(writable), writable), tuple(writable)


def plan_sandbox(
    bwrap: str,
    roots: Sequence[str],
    protected: Sequence[str],
    hidden: Sequence[str],
    temp: tuple[str, str] | None = None,
) -> SandboxPlan:
    """The mounts for `roots` (writable), `protected` (read-only, with each root's and git
    dir's settings added, nested repositories' too) and `hidden` (the host's private folders
    and files). `temp`: (the session's temp folder, the host's temp folder): when the host's
    is one of the roots, the session's is mounted in its place."""
    host_temp = os.path.realpath(temp[1]) if temp is not None else None
    if host_temp is not None and all(os.path.realpath(root) != host_temp for root in roots):
        temp = host_temp = None  # the host's temp folder is not writable: nothing to replace
    writable = _writable_roots(roots, host_temp)
    read_only: list[str] = []
    missing: list[str] = []
    for root in writable:
        for name in _ROOT_PROTECTED:
            path = os.path.join(root, name)
            if os.path.lexists(path):
                read_only.append(path)
            elif name == ".claude" and root == writable[0]:
                missing.append(path)
        # The workspace's nested repositories: the extra roots (the temp folder, plan files)
        # hold none of the person's, and a walk of a busy /tmp would be redone every command.
        nested, gitfiles = nested_git_dirs(root) if root == writable[0] else ((), ())
        read_only += gitfiles
        for git_dir in git_dirs(root):
            # write-guard's snapshots: a command that deletes their refs (then `gc`) would
            # take back what `hookchain restore` brings back. The host adds refs from outside.
            refs = os.path.join(git_dir, "refs")
            if os.path.isdir(refs):
                snaps = os.path.join(refs, "write-guard")
                (read_only if os.path.isdir(snaps) else missing).append(snaps)
        for git_dir in [*git_dirs(root), *nested]:
            read_only += [os.path.join(git_dir, name) for name in _GIT_PROTECTED]
            hooks = os.path.join(git_dir, "hooks")
            if not os.path.lexists(hooks) and inside(git_dir, writable):
                missing.append(hooks)
    # A linked work tree's gitfile names its git dir: rewritten, it would hand git a config
    # of the command's making (nested ones' are among `gitfiles` above).
    for root in writable:
        dot_git = os.path.join(root, ".git")
        if os.path.isfile(dot_git) and not os.path.islink(dot_git):
            read_only.append(dot_git)
    surface = git_surface(_repository_git_dirs(writable), writable) if writable else GitSurface()
    read_only += surface.bound
    for path in protected:
        read_only.append(os.path.realpath(path) if os.path.exists(path) else path)
    read_only = [p for p in dict.fromkeys(read_only) if os.path.exists(p) and inside(p, writable)]
    if temp is not None and host_temp is not None:
        # Below the host's temp folder only the roots are seen: the rest is the session's.
        def seen(path: str) -> bool:
            return not inside(path, [host_temp]) or inside(path, writable)

        hidden = [path for path in hidden if seen(path)]
        temp = (temp[0], host_temp)
    hidden_dirs = [path for path in dict.fromkeys(hidden) if os.path.isdir(path)]
    # A file inside a hidden folder is hidden with it: bwrap could not make its mount point
    # in the empty read-only folder that covers the folder.
    hidden_files = [
        path
        for path in dict.fromkeys(hidden)
        if os.path.isfile(path) and not inside(path, hidden_dirs)
    ]
    return SandboxPlan(
        bwrap=bwrap,
        writable=tuple(dict.fromkeys(writable)),
        read_only=tuple(read_only),
        hidden_dirs=tuple(hidden_dirs),
        hidden_files=tuple(hidden_files),
        missing_protected=tuple(dict.fromkeys(missing)),
        temp=temp,
        pinned=tuple(path for path in surface.pinned if path not in writable),
        git_absent=surface.absent,
    )


def bwrap_argv(plan: SandboxPlan) -> list[str]:
    """The bwrap command line, without its working directory and the command it runs."""
    # A process table of its own: through /proc/PID/root and /proc/PID/cwd of a process
    # outside (the harness's shell, the person's), every path is seen as that process sees it,
    # writable. Shared memory of its own: /dev/shm is every process's.
    argv = [plan.bwrap, "--die-with-parent", "--new-session", "--unshare-pid"]
    argv += ["--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    argv += ["--tmpfs", "/dev/shm"]
    if plan.temp is not None:
        session, host = plan.temp
        argv += ["--bind", session, host, "--setenv", "TMPDIR", host]
    # Parents first: a root or git dir inside another is bound on the outer one's mount.
    for path in sorted({*plan.writable, *plan.pinned}, key=lambda path: (len(path), path)):
        argv += ["--bind", path, path]
    for path in plan.read_only:
        argv += ["--ro-bind", path, path]
    for path in plan.missing_protected:
        argv += ["--tmpfs", path, "--remount-ro", path]
    for path in plan.hidden_dirs:
        argv += ["--tmpfs", path, "--remount-ro", path]
    for path in plan.hidden_files:
        argv += ["--ro-bind", "/dev/null", path]
    return argv


def shell_quote(text: str) -> str:
    """`text` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


# Inside: the outer shell's aliases and functions (the harness's shell snapshot defines them),
# read from the file the outer shell wrote them to, then the command as the harness would
# `eval` it, then the directory it ended in, written back to the same file for the outer shell
# to move to (the harness keeps a Bash call's cwd for the next one). One file and no command
# substitution: the outer shell forks nothing but bwrap and the final `rm`.
_INNER = (
    ". \"$" + MARKER + '_f" 2>/dev/null; shopt -s expand_aliases 2>/dev/null; '
    + MARKER + '_c=$1; set --; eval "$' + MARKER + '_c"; ' + MARKER + "_rc=$?; "
    'pwd -P >| "$' + MARKER + '_f" 2>/dev/null; exit $' + MARKER + "_rc"
)  # fmt: skip


def wrap_command(command: str, plan: SandboxPlan) -> str:
    """`command` rewritten to run inside the sandbox with the same stdin, stdout, stderr,
    environment, working directory (the shell's, when it runs), exit status and final working
    directory."""
    quoted = " ".join(shell_quote(word) for word in bwrap_argv(plan))
    quoted += ' --chdir "$PWD"'
    m = MARKER
    # The file's name outside (`_o`) and inside (`_f`): the same but where the session's temp
    # folder is mounted on the host's.
    outside = inside = '"${TMPDIR:-/tmp}"'
    if plan.temp is not None:
        outside, inside = shell_quote(plan.temp[0]), shell_quote(plan.temp[1])
    return (
        f"{m}_o={outside}/.write-guard.$$; {m}_f={inside}/.write-guard.$$; export {m}_f; "
        # Made anew (noclobber: O_EXCL), never written through a file or link of that name
        # the command planted before: this shell is outside the sandbox.
        f"{m}_C=$-; set -C; "
        f'{{ alias -p; declare -f; }} > "${m}_o" 2>/dev/null; '
        f"case ${m}_C in *C*) ;; *) set +C ;; esac; "
        f"{quoted} -- /bin/bash -c {shell_quote(_INNER)} bash {shell_quote(command)}; "
        f"{m}_rc=$?; "
        # After the command, outside the sandbox: its whole process tree has ended with it.
        f"{after_check(plan.git_absent, plan.writable)}"
        f'if read -r {m}_d < "${m}_o" 2>/dev/null && [ -d "${m}_d" ]; then cd -- "${m}_d"; fi; '
        f'rm -f -- "${m}_o"; unset {m}_o {m}_f {m}_d {m}_C; '
        # The status of the line is the command's (a function returns it without a fork).
        f"{m}_status() {{ return $1; }}; {m}_status ${m}_rc"
    )
