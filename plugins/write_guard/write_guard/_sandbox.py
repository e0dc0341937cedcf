"""Run a Bash command inside bubblewrap, built from the policy: the whole filesystem read-only,
the allowed roots writable, the protected paths read-only again inside them, the host's own
runtime and data folders hidden. Every child of the command inherits the same mounts.

Pure apart from `probe` (one run of bwrap per host) and `git_dirs` (reads a `.git` file)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

SandboxChoice = Literal["auto", "bwrap", "off"]

# What a workspace must never let the command change, relative to each writable root (and to
# each git dir found there): Claude Code's project settings and git's programs and config.
_ROOT_PROTECTED = (".claude", "hookchain.toml", ".hookchain")
_GIT_PROTECTED = ("config", "config.worktree", "hooks")
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
    """The git dir of a work tree at `root` and, for a linked work tree, its common dir."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return [dot_git]
    try:
        with open(dot_git, encoding="utf-8") as handle:
            first = handle.readline().strip()
    except (OSError, UnicodeDecodeError):
        return []
    if not first.startswith("gitdir:"):
        return []
    git_dir = os.path.normpath(os.path.join(root, first[len("gitdir:") :].strip()))
    found = [git_dir]
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            common = handle.readline().strip()
        found.append(os.path.normpath(os.path.join(git_dir, common)))
    except (OSError, UnicodeDecodeError):
        pass
    return [path for path in found if os.path.isdir(path)]


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def plan_sandbox(
    bwrap: str,
    roots: Sequence[str],
    protected: Sequence[str],
    hidden: Sequence[str],
) -> SandboxPlan:
    """The mounts for `roots` (writable), `protected` (read-only, with each root's and git
    dir's settings added) and `hidden` (the host's private folders and files)."""
    writable: list[str] = []
    for root in roots:
        real = os.path.realpath(root)
        if os.path.exists(real) and real != "/dev" and not real.startswith("/dev/"):
            writable.append(real)
    # A linked work tree writes its objects and refs in the main repository's git dir.
    extra_git: list[str] = []
    for root in list(writable):
        for git_dir in git_dirs(root):
            if not _inside(git_dir, writable):
                extra_git.append(git_dir)
    writable += extra_git
    read_only: list[str] = []
    missing: list[str] = []
    for root in writable:
        for name in _ROOT_PROTECTED:
            path = os.path.join(root, name)
            if os.path.lexists(path):
                read_only.append(path)
            elif name == ".claude" and root == writable[0]:
                missing.append(path)
        for git_dir in git_dirs(root):
            read_only += [os.path.join(git_dir, name) for name in _GIT_PROTECTED]
    for path in protected:
        read_only.append(os.path.realpath(path) if os.path.exists(path) else path)
    read_only = [p for p in dict.fromkeys(read_only) if os.path.exists(p) and _inside(p, writable)]
    hidden_dirs = [path for path in dict.fromkeys(hidden) if os.path.isdir(path)]
    # A file inside a hidden folder is hidden with it: bwrap could not make its mount point
    # in the empty read-only folder that covers the folder.
    hidden_files = [
        path
        for path in dict.fromkeys(hidden)
        if os.path.isfile(path) and not _inside(path, hidden_dirs)
    ]
    return SandboxPlan(
        bwrap=bwrap,
        writable=tuple(dict.fromkeys(writable)),
        read_only=tuple(read_only),
        hidden_dirs=tuple(hidden_dirs),
        hidden_files=tuple(hidden_files),
        missing_protected=tuple(missing),
    )


def bwrap_argv(plan: SandboxPlan) -> list[str]:
    """The bwrap command line, without its working directory and the command it runs."""
    argv = [plan.bwrap, "--die-with-parent", "--new-session", "--ro-bind", "/", "/"]
    argv += ["--dev-bind", "/dev", "/dev"]
    for root in plan.writable:
        argv += ["--bind", root, root]
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
    return (
        f'{m}_f="${{TMPDIR:-/tmp}}/.write-guard.$$"; export {m}_f; '
        f'{{ alias -p; declare -f; }} >| "${m}_f" 2>/dev/null; '
        f"{quoted} -- /bin/bash -c {shell_quote(_INNER)} bash {shell_quote(command)}; "
        f"{m}_rc=$?; "
        f'if read -r {m}_d < "${m}_f" 2>/dev/null && [ -d "${m}_d" ]; then cd -- "${m}_d"; fi; '
        f'rm -f -- "${m}_f"; unset {m}_f {m}_d; '
        # The status of the line is the command's (a function returns it without a fork).
        f"{m}_status() {{ return $1; }}; {m}_status ${m}_rc"
    )
