"""Turn a path as an agent wrote it into the requested and the symlink-resolved absolute paths."""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass

_VARIABLE = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
EXPANDABLE_VARIABLES = frozenset({"HOME", "CLAUDE_PROJECT_DIR", "PWD"})


@dataclass(frozen=True, slots=True)
class PathContext:
    """Where relative paths start and what `~` and the known variables stand for."""

    cwd: str
    home: str
    project_dir: str | None = None
    case_insensitive: bool = False

    def variables(self) -> Mapping[str, str]:
        known = {"HOME": self.home, "PWD": self.cwd}
        if self.project_dir:
            known["CLAUDE_PROJECT_DIR"] = self.project_dir
        return known


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    """`requested` is the lexically cleaned absolute path; `resolved` follows symlinks."""

    raw: str
    requested: str
    resolved: str


@dataclass(frozen=True, slots=True)
class PathRejection:
    """A path the guard refuses to reason about (NUL, non-UTF-8, unknown variable, empty)."""

    raw: str
    why: str


Resolutions = dict[str, tuple[str, bool]]
"""Absolute path → (its `os.path.realpath`, whether that exists); for one decision only, since
the file system may change between decisions."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """What resolving a path reads of the path as written and of its context alone (a pure
    function of both, so kept per context): the anchored path, the requested (cleaned) one,
    whether they are the same clean path, its parent and last name (`parent + tail`), and
    the answer when the file system turns out to add no symlink to it."""

    anchored: str
    requested: str
    clean: bool
    parent: str
    tail: str
    unchanged: ResolvedPath


PREPARED_KEPT = 4096
"""Paths as written whose preparation a context keeps (then it starts over)."""
CONTEXTS_KEPT = 64

_PREPARED: dict[PathContext, dict[str, Prepared | PathRejection]] = {}
# The last context asked for and its preparations: a host asks with one context object per
# session, and an identity test spares hashing its fields per decision (the reference held
# here keeps the object, so its id cannot be reused by another).
_last: tuple[PathContext | None, dict[str, Prepared | PathRejection]] = (None, {})


def prepared_for(context: PathContext) -> dict[str, Prepared | PathRejection]:
    """The preparations kept for `context` (an equal context shares them), each a pure
    function of the path as written and the context: no file system state is kept."""
    global _last
    last, found = _last
    if last is context:
        return found
    kept = _PREPARED.get(context)
    if kept is None:
        if len(_PREPARED) >= CONTEXTS_KEPT:
            _PREPARED.clear()
        kept = _PREPARED[context] = {}
    _last = (context, kept)
    return kept


def prepare(raw: str, context: PathContext) -> Prepared | PathRejection:
    """Expand `~` and the known variables, anchor at the cwd and clean: all but the walk."""
    if "\x00" in raw:
        return PathRejection(raw, "the path contains a NUL byte")
    if not raw.isascii():
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            return PathRejection(raw, "the path is not valid UTF-8")
    if not raw.strip():
        return PathRejection(raw, "the path is empty")
    if "$" in raw or "`" in raw or raw[:1] == "~":
        expanded = _expand(raw, context)
        if isinstance(expanded, PathRejection):
            return expanded
    else:
        expanded = raw
    # os.path.isabs and os.path.join spelled as the string operations they are on POSIX.
    cwd = context.cwd
    if expanded.startswith("/") or not cwd:
        anchored = expanded
    else:
        anchored = cwd + expanded if cwd.endswith("/") else cwd + "/" + expanded
    # An absolute path with no empty, `.` or `..` name and no trailing slash is already what
    # normpath returns. normpath keeps a leading "//" (POSIX allows it a special meaning);
    # treat it as "/".
    clean = not ("//" in anchored or anchored.endswith("/") or anchored[:1] != "/")
    if clean and "/." in anchored:
        # A name that only starts with a dot (`.git`) is a plain name; `.` and `..` are not.
        clean = not ("/./" in anchored or "/../" in anchored or anchored.endswith(("/.", "/..")))
    if clean:
        requested = anchored
    else:
        requested = os.path.normpath(anchored)
        if requested.startswith("//"):
            requested = "/" + requested.lstrip("/")
    cut = anchored.rfind("/")
    return Prepared(
        anchored,
        requested,
        clean,
        anchored[:cut],
        anchored[cut:],
        ResolvedPath(raw, requested, requested),
    )


def resolve_prepared(path: Prepared, known: Resolutions) -> ResolvedPath:
    """The resolution of a prepared path within one decision (`known`, see `realpath`)."""
    anchored = path.anchored
    if path.clean:
        # A name in a folder this decision found missing is missing too: `rm` lists of one
        # folder take it path after path (`clean_realpath` would find the same in more steps).
        above = known.get(path.parent)
        if above is not None and not above[1]:
            resolved = above[0] + path.tail
            known[anchored] = (resolved, False)
        else:
            resolved = clean_realpath(anchored, known)[0]
    else:
        # realpath works on the unnormalised form so that "link/.." follows the link like
        # the kernel.
        resolved = realpath(anchored, known)[0]
    unchanged = path.unchanged
    if resolved == unchanged.resolved:
        return unchanged
    return ResolvedPath(unchanged.raw, path.requested, resolved)


def resolve_path(
    raw: str, context: PathContext, known: Resolutions | None = None
) -> ResolvedPath | PathRejection:
    """Expand `~` and the known variables, anchor at the cwd, clean, and resolve symlinks.

    `known` carries the resolutions of one decision, so that its targets share their ancestors.
    """
    path = prepare(raw, context)
    if isinstance(path, PathRejection):
        return path
    if known is None:
        return ResolvedPath(raw, path.requested, os.path.realpath(path.anchored))
    return resolve_prepared(path, known)


def realpath(path: str, known: Resolutions) -> tuple[str, bool]:
    """`os.path.realpath(path)` built from its parent's, each resolution kept in `known`.

    The realpath of `parent/name`, for a plain `name` that is not a symlink, is the parent's
    realpath joined with `name`; a name below a missing parent is missing too, with no syscall.
    An empty or `.` name (`a//b`, `a/`, `a/.`) resolves as its parent: realpath skips it.
    Anything else (a symlink, `..`, a relative path) goes to `os.path.realpath` itself.
    """
    found = known.get(path)
    if found is not None:
        return found
    # A name below a parent this decision found missing is missing too, whatever it is called:
    # the parent's realpath with the name appended, as the walk below would end with after one
    # step (`rm` lists of one directory take it path after path). Only False entries come from
    # `lstat` on absolute paths; an empty, `.` or `..` name takes the walk.
    parent, _, name = path.rpartition("/")
    above = known.get(parent)
    if above is not None and not above[1] and name and name != "." and name != "..":
        found = (above[0] + "/" + name if above[0] != "/" else "/" + name, False)
        known[path] = found
        return found
    # Up to the nearest ancestor already known (or one only os.path.realpath resolves), then
    # down again name by name; a loop rather than recursion, as this runs for every ancestor.
    below: list[tuple[str, str]] = []
    current = path
    while True:
        if current == "/":
            found = ("/", True)  # what os.path.realpath("/") returns, without its walk
            break
        parent, _, name = current.rpartition("/")
        if name == ".." or not current.startswith("/"):
            found = (os.path.realpath(current), True)
            break
        below.append((current, name))
        current = parent.rstrip("/") or "/"
        found = known.get(current)
        if found is not None:
            break
    known[current] = found
    base, exists = found
    for child, name in reversed(below):
        if name and name != ".":
            candidate = base + "/" + name if base != "/" else "/" + name
            if exists:
                try:
                    mode = os.lstat(candidate).st_mode
                except OSError as error:
                    # realpath keeps the name as written; only a name known to be absent spares
                    # its descendants their lstat (any other failure leaves them to be tried).
                    exists = error.errno not in (errno.ENOENT, errno.ENOTDIR)
                else:
                    # A symlink, and only a symlink, needs the full walk.
                    candidate = os.path.realpath(child) if stat.S_ISLNK(mode) else candidate
            base = candidate
        known[child] = (base, exists)
    return base, exists


def clean_realpath(path: str, known: Resolutions) -> tuple[str, bool]:
    """`realpath(path, known)` for a clean absolute path (no empty, `.` or `..` name, no
    trailing slash), walked over slices of `path` itself rather than names split off it.

    Up to the deepest ancestor already known (by cutting names off the end; with nothing
    known yet, `/` at once), then down name by name: each name `lstat`-ed once per decision,
    its resolution kept in `known` for the targets that share it. Below a name found missing
    everything is missing too, and resolves as written below that name's resolution, with no
    further syscall.
    """
    found = known.get(path)
    if found is not None:
        return found
    end = len(path)
    base, exists = "/", True
    if known:
        while True:
            end = path.rfind("/", 0, end)
            if end <= 0:
                end = 0
                break
            found = known.get(path[:end])
            if found is not None:
                base, exists = found
                break
    else:
        end = 0
    size = len(path)
    while exists:
        start = end
        end = path.find("/", start + 1)
        if end < 0:
            end = size
        # `base` is the resolution of path[:start]: "/" only when that is the root (or a
        # symlink to it), where the name's own slash is all the join needs.
        candidate = path[start:end] if base == "/" else base + path[start:end]
        try:
            mode = os.lstat(candidate).st_mode
        except OSError as error:
            # realpath keeps the name as written; only a name known to be absent spares its
            # descendants their lstat (any other failure leaves them to be tried).
            exists = error.errno not in (errno.ENOENT, errno.ENOTDIR)
        else:
            # A symlink, and only a symlink, needs the full walk.
            if stat.S_ISLNK(mode):
                candidate = os.path.realpath(path[:end])
        base = candidate
        if end == size:
            found = known[path] = (base, exists)
            return found
        known[path[:end]] = (base, exists)
    # Missing from `end` on: the rest as written (its first character is a slash). The parent
    # is kept too: the targets of one command are often names in one folder.
    parent = path.rfind("/")
    if parent > end:
        known[path[:parent]] = (base + path[end:parent], False)
    found = known[path] = (base + path[end:], False)
    return found


def _expand(raw: str, context: PathContext) -> str | PathRejection:
    text = raw
    if "$" not in text and "`" not in text and not text.startswith("~"):
        return text
    if text == "~" or text.startswith("~/"):
        text = context.home + text[1:]
    elif text.startswith("~"):
        return PathRejection(raw, "another user's home directory (~user) is not resolved")
    variables = context.variables()
    unknown: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        if name in variables:
            return variables[name]
        unknown.append(name)
        return match.group(0)

    text = _VARIABLE.sub(substitute, text)
    if unknown or "$" in text or "`" in text:
        return PathRejection(
            raw, "the path depends on a variable or substitution the guard cannot see"
        )
    return text


def is_within(path: str, root: str, *, case_insensitive: bool = False) -> bool:
    """Whether `path` is `root` or below it (both absolute and clean)."""
    if case_insensitive:
        path, root = path.casefold(), root.casefold()
    if path == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return path.startswith(prefix)


@functools.lru_cache(maxsize=256)
def root_forms(root: str) -> tuple[str, ...]:
    """A configured root both as written (cleaned) and with its symlinks resolved."""
    cleaned = os.path.normpath(os.path.expanduser(root))
    resolved = os.path.realpath(cleaned)
    return (cleaned,) if cleaned == resolved else (cleaned, resolved)
