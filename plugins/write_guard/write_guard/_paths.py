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


def resolve_path(
    raw: str, context: PathContext, known: Resolutions | None = None
) -> ResolvedPath | PathRejection:
    """Expand `~` and the known variables, anchor at the cwd, clean, and resolve symlinks.

    `known` carries the resolutions of one decision, so that its targets share their ancestors.
    """
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
        expanded = raw  # nothing to expand: the common case spares a call
    # os.path.isabs and os.path.join spelled as the string operations they are on POSIX.
    cwd = context.cwd
    if expanded.startswith("/") or not cwd:
        anchored = expanded
    else:
        anchored = cwd + expanded if cwd.endswith("/") else cwd + "/" + expanded
    # An absolute path with no empty, `.` or `..` name and no trailing slash is already what
    # normpath returns. normpath keeps a leading "//" (POSIX allows it a special meaning);
    # treat it as "/".
    if "//" in anchored or "/." in anchored or anchored.endswith("/") or anchored[:1] != "/":
        requested = os.path.normpath(anchored)
        if requested.startswith("//"):
            requested = "/" + requested.lstrip("/")
    else:
        requested = anchored
    # realpath works on the unnormalised form so that "link/.." follows the link like the kernel.
    resolved = os.path.realpath(anchored) if known is None else realpath(anchored, known)[0]
    return ResolvedPath(raw, requested, resolved)


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
