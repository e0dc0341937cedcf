"""Files and folders private to this user: one rule for checking, creating and replacing them.

The host keeps secrets and state in them (the http token and port, the socket folder, the store,
Claude Code's settings). The stdlib-only launcher checks the same rule through
`framework._launch.private_to_user`, which this module uses too.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from framework._launch import private_to_user

__all__ = ["PrivateFileError", "ensure_private_dir", "read_private", "write_private"]


class PrivateFileError(OSError):
    """A file or folder that should be this user's alone is not: the message says why."""


def ensure_private_dir(path: Path, error: type[Exception] = PrivateFileError) -> Path:
    """Create `path` 0700 (with its parents), or check an existing one is a folder of this user,
    closed to others; else raise `error` naming the path and what is wrong."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise error(f"{path} is not a directory owned by this user; refusing to use it")
    if not private_to_user(info):
        raise error(f"{path} is open to other users (mode {info.st_mode & 0o777:o})")
    return path


def read_private(path: Path, error: type[Exception] = PrivateFileError) -> str:
    """The text of a file that must be this user's and closed to others (a token, a port)."""
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode) or not private_to_user(info):
        raise error(f"{path} must be a file private to this user (chmod 600)")
    return path.read_text(encoding="utf-8")


def write_private(path: Path, text: str, *, mode: int = 0o600, exclusive: bool = False) -> bool:
    """Replace `path` atomically with `text`: a reader sees the old file or the new, never half.

    Written beside it (same file system), flushed, given `mode` before it appears, then renamed
    into place. `exclusive=True` never replaces an existing file (a token other processes may have
    read already): answers False and leaves it, True when this call created it.
    """
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if exclusive:
            try:
                os.link(temp, path)  # atomic, and fails if the name exists
            except FileExistsError:
                return False
            return True
        os.replace(temp, path)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
