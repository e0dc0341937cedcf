"""The files inside a git dir that point git somewhere else, and what becomes of them under the
sandbox.

Git reads more than `config` and `hooks/` from a git dir: `commondir` names another common dir
(and so another config and hooks, for the main git dir too, not only a linked work tree's),
`worktrees/NAME/commondir` and `gitdir` do the same for a linked work tree, `config.worktree`
is a config (read when `extensions.worktreeConfig` is set), a config's `include.path` and
`includeIf.*.path` name more configs, and `objects/info/alternates` names other object stores
(a later `gc` drops the local copies of what it finds there). A sandboxed command that leaves
one of them behind makes git run a program of its making the next time the person runs git,
outside the sandbox.

What exists when the sandbox is planned is bound read-only (`GitSurface.bound`); the git dirs
are bound onto themselves (`pinned`), so that a command can neither move nor remove them and
put a `.git` of its making in their place (`rename` of a mount point fails with EBUSY). What
does not exist yet cannot be bound without creating it on the host (an empty `commondir`
breaks git), so `absent` is checked after the command, with shell builtins only (no fork when
nothing changed): a path that appeared is moved aside to `<path>.write-guard-undone`, nothing
is deleted, and the command's output says so. The host checks the same paths again when the
result comes back (the route where Claude Code's own sandbox runs the command has no wrapper)
and tells the person.

Pure apart from reading configs and `worktrees/` listings (`git_surface`) and `undo`."""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

REDIRECTS = ("commondir", "config.worktree", "objects/info/alternates",
             "objects/info/http-alternates")  # fmt: skip
"""Per git dir: the files that point git elsewhere, beside `config` and `hooks`."""
WORKTREE_REDIRECTS = ("commondir", "gitdir", "config.worktree")
"""Per linked work tree's entry under `worktrees/`."""
ASIDE = ".write-guard-undone"
"""The suffix a redirection that appeared during a command is moved aside to."""
INCLUDE_DEPTH = 4
"""Included configs followed this deep (git's own limit is 10; past a few it is not a config
a person wrote)."""
CONFIG_READ_MAX = 65_536
MARKER = "__write_guard_gitdir"

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]\s*(.*)$')
_PATH_KEY = re.compile(r"^\s*path\s*=\s*(.*?)\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class GitSurface:
    """What redirects git in the roots' repositories, by how the sandbox keeps it."""

    bound: tuple[str, ...] = ()
    """Redirections that exist: bound read-only."""
    absent: tuple[str, ...] = ()
    """Redirections that do not exist yet: checked after the command."""
    pinned: tuple[str, ...] = ()
    """Git dirs bound onto themselves, so that they cannot be moved or removed."""


def inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def include_targets(config: str, home: str | None = None) -> list[str]:
    """The files a config includes (`include.path`, `includeIf.<condition>.path`, whatever the
    condition: the person's git may meet it), absolute, followed into what exists."""
    found: list[str] = []
    pending = [(config, 0)]
    while pending:
        path, depth = pending.pop()
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(CONFIG_READ_MAX)
        except OSError:
            continue
        for target in _includes(text):
            if target.startswith("~/"):
                target = (home or os.path.expanduser("~")) + target[1:]
            full = os.path.normpath(os.path.join(os.path.dirname(path), target))
            if full not in found:
                found.append(full)
                if depth + 1 < INCLUDE_DEPTH:
                    pending.append((full, depth + 1))
    return found


def _includes(text: str) -> list[str]:
    targets: list[str] = []
    section = ""
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1).casefold()
            line = header.group(2)
        if section not in ("include", "includeif"):
            continue
        key = _PATH_KEY.match(line.split("#", 1)[0].split(";", 1)[0])
        if key is not None and key.group(1):
            targets.append(key.group(1).strip().strip('"'))
    return targets


def git_surface(git_dirs: Sequence[str], writable: Sequence[str]) -> GitSurface:
    """The redirections of `git_dirs` that a command could write (inside `writable`), and the
    git dirs it could move."""
    bound: list[str] = []
    absent: list[str] = []
    pinned: list[str] = []
    for git_dir in dict.fromkeys(git_dirs):
        if os.path.isdir(git_dir) and not os.path.islink(git_dir):
            pinned.append(git_dir)
        paths = [os.path.join(git_dir, name) for name in REDIRECTS]
        for entry in sorted(subfolders(os.path.join(git_dir, "worktrees"))):
            paths += [os.path.join(entry, name) for name in WORKTREE_REDIRECTS]
        for config in (os.path.join(git_dir, "config"), os.path.join(git_dir, "config.worktree")):
            paths += include_targets(config)
        for path in paths:
            (bound if os.path.lexists(path) else absent).append(path)
    return GitSurface(
        bound=tuple(p for p in dict.fromkeys(bound) if inside(p, writable)),
        absent=tuple(p for p in dict.fromkeys(absent) if inside(p, writable)),
        pinned=tuple(p for p in dict.fromkeys(pinned) if inside(p, writable)),
    )


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def after_check(absent: Sequence[str], writable: Sequence[str]) -> str:
    """Shell that moves aside each of `absent` that appeared, saying so on stderr; builtins
    only while none did. It runs outside the sandbox, so it acts only where the path's folder
    really is inside `writable` (a folder the command replaced by a link to one outside is
    not followed, and `mv -T` replaces an aside name the command planted as a link rather
    than moving into where it points). Fail-closed: one that cannot be moved is removed, and
    one that can be neither is named as still there."""
    if not absent:
        return ""
    paths = " ".join(_quote(path) for path in absent)
    within = "|".join(_quote(root.rstrip("/")) + "/*" for root in writable)
    m = MARKER
    return (
        f"for {m}_p in {paths}; do "
        f'if [ -e "${m}_p" ] || [ -L "${m}_p" ]; then '
        f'if ( cd -P -- "${{{m}_p%/*}}" 2>/dev/null && case "$PWD/" in {within}) '
        f'{m}_n="$PWD/${{{m}_p##*/}}"; mv -fT -- "${m}_n" "${m}_n{ASIDE}" 2>/dev/null '
        f'|| rm -rf -- "${m}_n";; *) false;; esac ); then '
        f'printf "write-guard: undid %s, written by this command: it would point git at '
        f"files of the command's making the next time git runs there (kept as %s)\\n\" "
        f'"${m}_p" "${m}_p{ASIDE}" >&2; '
        f'else printf "write-guard: could not undo %s: remove it before running git there\\n" '
        f'"${m}_p" >&2; fi; fi; done; unset {m}_p; '
    )


@dataclass(frozen=True, slots=True)
class Undone:
    path: str
    kept: str | None
    """Where it was moved (None: it could not be moved and was removed, or is still there)."""
    left: bool = False
    """It could be neither moved nor removed."""


def aside_state(absent: Sequence[str]) -> dict[str, tuple[int, int] | None]:
    """Each of `absent`'s aside file's (inode, mtime) or None: what the wrapper moved aside
    during a command shows as a change of this."""
    state: dict[str, tuple[int, int] | None] = {}
    for path in absent:
        try:
            info = os.lstat(path + ASIDE)
            state[path] = (info.st_ino, info.st_mtime_ns)
        except OSError:
            state[path] = None
    return state


def undo(
    absent: Sequence[str],
    before: dict[str, tuple[int, int] | None],
    writable: Sequence[str],
) -> list[Undone]:
    """After a command: move aside each of `absent` that appeared (where no wrapper ran), and
    name those the wrapper moved aside during it (`before`: `aside_state` before it ran).
    Only where the path's folder really is inside `writable`, as `after_check`."""
    undone: list[Undone] = []
    for path in absent:
        aside = path + ASIDE
        if _empty_file(path):
            # Points git nowhere; and Claude Code's own sandbox makes one at each absent path it
            # denies writes to, for as long as a command (one in the background) runs.
            continue
        if os.path.lexists(path):
            real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
            if not inside(real, writable):
                undone.append(Undone(path, None, left=True))
                continue
            try:
                os.replace(real, real + ASIDE)
                undone.append(Undone(path, aside))
            except OSError:
                undone.append(Undone(path, None, left=_remove(real)))
        elif aside_state([path])[path] != before.get(path):
            undone.append(Undone(path, aside if os.path.lexists(aside) else None))
    return undone


def _empty_file(path: str) -> bool:
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == 0


def _remove(path: str) -> bool:
    """Remove `path`; whether it is still there."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        return True
    return False


def identities(git_dirs: Sequence[str]) -> dict[str, tuple[int, int] | None]:
    """Each git dir's (device, inode), or None where there is none."""
    found: dict[str, tuple[int, int] | None] = {}
    for path in git_dirs:
        try:
            info = os.lstat(path)
            found[path] = (info.st_dev, info.st_ino)
        except OSError:
            found[path] = None
    return found


def put_back(before: dict[str, tuple[int, int] | None]) -> list[Undone]:
    """After a command that ran where git dirs are not bound onto themselves (Claude Code's
    own sandbox): a git dir moved away, and something else put in its place, is moved back.
    The replacement is moved aside (never deleted); the original is looked for in the folder
    it was in and one level below it. Not found, the replacement is moved aside all the same:
    git then finds no repository there rather than one of the command's making."""
    undone: list[Undone] = []
    now = identities(list(before))
    for path, identity in before.items():
        if identity is None or now[path] == identity:
            continue
        kept = None
        if now[path] is not None:
            kept = free_name(path + ASIDE)
            try:
                os.replace(path, kept)
            except OSError:
                undone.append(Undone(path, None, left=True))
                continue
        original = _find(identity, os.path.dirname(path))
        if original is not None:
            try:
                os.replace(original, path)
            except OSError:
                original = None
        undone.append(Undone(path, kept, left=original is None and kept is None))
    return undone


def free_name(path: str) -> str:
    candidate, n = path, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = f"{path}.{n}"
    return candidate


def subfolders(folder: str) -> list[str]:
    """The folders (not links to folders) in `folder`; none where it cannot be listed."""
    try:
        with os.scandir(folder) as listing:
            return [e.path for e in listing if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _find(identity: tuple[int, int], folder: str, depth: int = 2) -> str | None:
    """The folder of this (device, inode) in `folder` or below it, `depth` levels at most."""
    below = subfolders(folder)
    for path, seen in identities(below).items():
        if seen == identity:
            return path
    if depth > 1:
        for path in below:
            found = _find(identity, path, depth - 1)
            if found is not None:
                return found
    return None


def undone_text(undone: Sequence[Undone]) -> str:
    """What the person and the model are told."""
    parts = []
    for item in undone:
        if item.left and item.kept is None and not os.path.lexists(item.path):
            parts.append(f"{item.path} was moved away and not found: look for it")
        elif item.left:
            parts.append(f"{item.path} could not be undone: remove it before running git there")
        else:
            kept = f" (kept as {item.kept})" if item.kept else ""
            parts.append(f"undid {item.path}{kept}")
    return (
        "A shell command wrote files that point git at files of its making, so that git would "
        "run its programs the next time it runs there outside the sandbox: "
        + "; ".join(parts)
        + "."
    )


GITFILE_READ_MAX = 1 << 20
"""A `.git` file or `commondir` bigger than this names nothing (git refuses one too)."""


def gitfile_target(dot_git: str) -> str | None:
    """The git dir a `.git` file names, read by git's rules (`read_gitfile_gently`): a regular
    file starting `gitdir: `, the path after it kept whole but for trailing CRs and LFs, and
    only up to a NUL (git reads it as a C string); relative to the file's folder. None where
    git would find none (not a file, another form); the path need not exist."""
    path = _path_in(dot_git, b"gitdir: ")
    return None if path is None else os.path.join(os.path.dirname(dot_git), path)


def commondir_target(git_dir: str) -> str | None:
    """The common dir `git_dir/commondir` names (same rules, relative to `git_dir`)."""
    path = _path_in(os.path.join(git_dir, "commondir"), b"")
    return None if path is None else os.path.normpath(os.path.join(git_dir, path))


def linked_gitfile(git_dir: str) -> str | None:
    """The `.git` file a linked work tree's git dir names back (`gitdir`, which git writes
    when it makes the work tree; same rules, relative to `git_dir`), or None."""
    path = _path_in(os.path.join(git_dir, "gitdir"), b"")
    return None if path is None else os.path.normpath(os.path.join(git_dir, path))


def _path_in(file: str, prefix: bytes) -> str | None:
    try:
        # Only a regular file, as git checks: a FIFO would block the reader for good.
        if not stat.S_ISREG(os.stat(file).st_mode):
            return None
        with open(file, "rb") as handle:
            data = handle.read(GITFILE_READ_MAX + 1)
    except (OSError, ValueError):
        return None
    if len(data) > GITFILE_READ_MAX or not data.startswith(prefix):
        return None
    path = data.rstrip(b"\r\n")[len(prefix) :].split(b"\0", 1)[0]
    return os.fsdecode(path) if path else None
