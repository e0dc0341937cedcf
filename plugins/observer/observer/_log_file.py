"""Append-only monthly JSONL files: one scrubbed line per write, user-private and their reader."""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from observer._pii import clean_strings, scrub_value, unchanged_plain
from observer._records import Episode, ObserverErrorMarker, OutcomeLine

_MONTH_FILE = re.compile(r"^episodes-(\d{4})-(\d{2})\.jsonl$")
_DIR_MODE = 0o700
_FILE_MODE = 0o600


class UnsafeLogPath(Exception):
    """The log path is not a private regular file in a private directory of this user."""


def month_file_name(ms: int) -> str:
    """`episodes-YYYY-MM.jsonl` for the UTC month of `ms` (milliseconds since the epoch)."""
    global _last_month
    first_ms, end_ms, name = _last_month
    if first_ms <= ms < end_ms:
        return name
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    first = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if first.month == 12:
        following = first.replace(year=first.year + 1, month=1)
    else:
        following = first.replace(month=first.month + 1)
    name = f"episodes-{moment:%Y-%m}.jsonl"
    # Lines of one month are written one after another: the month's bounds are kept, so the
    # next line of the same month costs two comparisons instead of a date conversion.
    _last_month = (int(first.timestamp() * 1000), int(following.timestamp() * 1000), name)
    return name


_last_month: tuple[int, int, str] = (0, 0, "")


def ensure_private_dir(directory: Path, *, likely_new: bool = False) -> None:
    """Create `directory` (and parents) as 0700, or tighten an existing one this user owns.

    `likely_new` (a folder that usually does not exist yet) creates it before looking it up,
    sparing the failed lookup; when that creation fails (the folder is there, a parent is missing,
    or any other error) the usual way follows and ends as it always did. The created folder gets
    the same checks either way.
    """
    if likely_new:
        try:
            os.mkdir(directory, _DIR_MODE)
        except OSError:
            pass
        else:
            _confirm_created(directory)
            return
    try:
        found = os.lstat(directory)
    except OSError:
        pass
    else:
        # Already a private directory of this user (the usual case): nothing to create or fix.
        if (
            stat.S_ISDIR(found.st_mode)
            and found.st_uid == os.getuid()
            and stat.S_IMODE(found.st_mode) == _DIR_MODE
        ):
            return
    new_hookchain = _missing_hookchain_folder(directory)
    directory.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    _confirm_created(directory)
    if new_hookchain is not None:
        _ignore_everything_in(new_hookchain)


HOOKCHAIN_FOLDER = ".hookchain"
"""The per-project folder of hookchain's files; the observer's log lives under it by default."""


def _missing_hookchain_folder(directory: Path) -> Path | None:
    """The `.hookchain` folder on the way to `directory` if it does not exist yet, else None."""
    for candidate in (directory, *directory.parents):
        if candidate.name == HOOKCHAIN_FOLDER:
            return None if os.path.lexists(candidate) else candidate
    return None


def _ignore_everything_in(folder: Path) -> None:
    """Write `folder/.gitignore` holding `*`, so the folder never shows in `git status`."""
    try:
        descriptor = os.open(
            folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _FILE_MODE
        )
    except FileExistsError:
        return
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(b"*\n")


def _confirm_created(directory: Path) -> None:
    """Refuse a created (or found) folder that is not a directory of this user; make it 0700."""
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeLogPath(f"{directory} is not a directory")
    if info.st_uid != os.getuid():
        raise UnsafeLogPath(f"{directory} belongs to another user")
    if stat.S_IMODE(info.st_mode) != _DIR_MODE:
        directory.chmod(_DIR_MODE)


def replace_private_file(directory: Path, name: str, payload: bytes, *, durable: bool) -> Path:
    """Replace `directory/name` in one step: a private temporary file renamed into place.

    `durable=False` skips the fsync: only for a sandboxed host's throwaway folder.
    """
    ensure_private_dir(directory)
    target = directory / name
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(payload)
            stream.flush()
            if durable:
                os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


# The line encoder, built once rather than per line; records are trees of fresh plain values,
# so the check for reference cycles is left out.
_encode = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=False, check_circular=False
).encode


def prepare_record_keys() -> None:
    """Scrub the field names of every line type once now, so the first lines find them known."""
    for model in (Episode, OutcomeLine, ObserverErrorMarker):
        scrub_value(_field_names(model))


def _field_names(model: type[BaseModel]) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            names[name] = _field_names(nested)
        else:
            names[name] = None
    return names


def encode_line(record: Mapping[str, Any]) -> bytes:
    """One JSON line, every string scrubbed; JSON escapes keep any newline inside a value."""
    if type(record) is dict and unchanged_plain(record):
        # The usual line: plain values the filter leaves as they are. orjson writes such a
        # record, when all ASCII, byte for byte as the standard encoder below does (tests hold
        # the two paths equal over the corpus), in a fraction of the time.
        line = _plain_line(record)
        if line is not None:
            return line
    return encode_line_scrubbed(record)


def encode_own_line(record: dict[str, Any], outside: Iterable[Any]) -> bytes:
    """`encode_line` for a line the observer built itself, whose only values from outside are
    `outside` (e.g. `episode_outside_values`): when those are clean, the rest (the schema's keys
    and constants, counts, flags, its own UUID and timestamp) is known clean without a look at
    each of them; otherwise `encode_line` decides."""
    if clean_strings(outside):
        line = _plain_line(record)
        if line is not None:
            return line
    return encode_line(record)


def _plain_line(record: dict[str, Any]) -> bytes | None:
    try:
        line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return None  # an int beyond 64 bits, nesting too deep: the standard encoder decides
    return line if line.isascii() else None


def encode_line_scrubbed(record: Mapping[str, Any]) -> bytes:
    """`encode_line` by its full path: every string scrubbed, then the standard encoder."""
    return (_encode(scrub_value(record)) + "\n").encode("utf-8")


def _check_line(line: bytes) -> None:
    if not line.endswith(b"\n") or b"\n" in line[:-1]:
        raise ValueError("a log line must be exactly one newline-terminated line")


# Read as well as append: the last byte tells whether a short write left a fragment at the end.
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _open_for_append(path: Path) -> tuple[int, os.stat_result]:
    """An `O_APPEND` descriptor on `path`, refused unless a regular file of this user, made 0600."""
    descriptor = os.open(path, _APPEND_FLAGS, _FILE_MODE)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise UnsafeLogPath(f"{path} is not a regular file of this user")
        if stat.S_IMODE(info.st_mode) != _FILE_MODE:
            os.fchmod(descriptor, _FILE_MODE)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, info


def _write_line(descriptor: int, path: Path, line: bytes, *, durable: bool) -> None:
    """Write one line in one `write`; after a fragment, behind a newline in that same write.

    A short write (a full disk) leaves a piece of a line at the end of the file, and the next
    line would be glued onto it. So under an exclusive `flock` (which every writer of the log
    takes, so no other line is half-way in) the last byte is read first: when it is not a
    newline, the line goes out as `\n` + line, and the fragment stays a line of its own (read
    as unreadable, never merged with a good one).
    """
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    try:
        # The file's size without building a stat result: the offset this moves is never used
        # (an O_APPEND write goes to the end, and pread names its own offset).
        size = os.lseek(descriptor, 0, os.SEEK_END)
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            line = b"\n" + line
        written = os.write(descriptor, line)
    finally:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
    if written != len(line):
        raise OSError(f"short write to {path}: {written} of {len(line)} bytes")
    if durable:
        os.fsync(descriptor)


def append_line(path: Path, line: bytes, *, durable: bool = True) -> None:
    """Append one complete line with a single `write` on an `O_APPEND` descriptor, then fsync.

    The kernel positions and writes an `O_APPEND` write to a regular file as one step, so lines
    from several processes never interleave; a short write is reported rather than continued,
    because a second write could land after another process's line. `durable=False` skips the
    fsync: only for a sandboxed host's throwaway log, never for a real one.
    """
    _check_line(line)
    descriptor, _ = _open_for_append(path)
    try:
        _write_line(descriptor, path, line, durable=durable)
    finally:
        os.close(descriptor)


def append_record(
    data_dir: Path, record: Mapping[str, Any], ms: int, *, durable: bool = True
) -> Path:
    """Scrub and append `record` to the month file of `ms` under `data_dir`; returns the file."""
    global _last_path
    ensure_private_dir(data_dir)
    name = month_file_name(ms)
    last_dir, last_name, path = _last_path
    if data_dir != last_dir or name != last_name:
        # Consecutive lines usually go to the same file: its path is joined once.
        path = data_dir / name
        _last_path = (data_dir, name, path)
    append_line(path, encode_line(record), durable=durable)
    return path


_last_path: tuple[Path | None, str, Path] = (None, "", Path())


@dataclass(slots=True)
class _OpenMonthFile:
    data_dir: Path
    name: str
    path: Path
    descriptor: int
    device: int
    inode: int


class MonthLog:
    """One host's writer of the log: the folder confirmed private once, the month file kept open.

    Each line still goes out as one `write` on an `O_APPEND` descriptor (so lines of several
    processes never tear or interleave), after one `lstat` of the file's path: the kept
    descriptor is used only while the path still names that same inode, as a regular 0600 file
    of this user. Otherwise (rotated, replaced, removed, loosened, or another month or folder)
    the file is closed and opened afresh with every check of `append_line`, and the folder is
    confirmed private again. A folder's own permissions changed while its file stays the same
    are thus corrected at the next reopen, not at the next line. `close()` releases the file
    (at `session.end`, and when the writer is collected).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._confirmed: set[Path] = set()
        self._open: _OpenMonthFile | None = None

    def append(
        self, data_dir: Path, record: Mapping[str, Any], ms: int, *, durable: bool = True
    ) -> Path:
        """Scrub and append `record` to the month file of `ms` under `data_dir`."""
        return self.write(data_dir, encode_line(record), ms, durable=durable)

    def write(
        self,
        data_dir: Path,
        line: bytes,
        ms: int,
        *,
        durable: bool = True,
        new_folder_likely: bool = False,
    ) -> Path:
        """Append one encoded, scrubbed line to the month file of `ms` under `data_dir`.

        `new_folder_likely`: the folder, when this writer first writes there, usually does not
        exist yet (a sandboxed host's), so it is created before it is looked up.
        """
        _check_line(line)
        with self._lock:
            confirmed_now = data_dir not in self._confirmed
            if confirmed_now:
                ensure_private_dir(data_dir, likely_new=new_folder_likely)
                self._confirmed.add(data_dir)
            current = self._current(data_dir, month_file_name(ms), confirmed_now)
            _write_line(current.descriptor, current.path, line, durable=durable)
            return current.path

    def _current(self, data_dir: Path, name: str, confirmed_now: bool = False) -> _OpenMonthFile:
        current = self._open
        if (
            current is not None
            and current.name == name
            # A host passes the same folder object line after line: the identity settles it.
            and (current.data_dir is data_dir or current.data_dir == data_dir)
        ):
            try:
                found = os.lstat(current.path)
            except FileNotFoundError:
                pass
            else:
                if (
                    found.st_ino == current.inode
                    and found.st_dev == current.device
                    and stat.S_ISREG(found.st_mode)
                    and found.st_uid == os.getuid()
                    and stat.S_IMODE(found.st_mode) == _FILE_MODE
                ):
                    return current
        self._close_current()
        if not confirmed_now:
            # A folder confirmed by this same line, under the lock, is not confirmed twice.
            ensure_private_dir(data_dir)
        path = data_dir / name
        descriptor, info = _open_for_append(path)
        self._open = _OpenMonthFile(data_dir, name, path, descriptor, info.st_dev, info.st_ino)
        return self._open

    def _close_current(self) -> None:
        current, self._open = self._open, None
        if current is not None:
            os.close(current.descriptor)

    def close(self) -> None:
        """Close the kept month file; the next line opens it again."""
        with self._lock:
            self._close_current()


@dataclass(frozen=True, slots=True)
class LogContents:
    """Every parsed line of the log, oldest file first, and how many lines could not be read."""

    records: tuple[dict[str, Any], ...]
    unreadable_lines: int


def log_files(data_dir: Path) -> list[Path]:
    """The month files under `data_dir`, oldest first."""
    if not data_dir.is_dir():
        return []
    return sorted(path for path in data_dir.iterdir() if _MONTH_FILE.match(path.name))


def no_data_message(data_dir: Path) -> str:
    """What to say where there is no log: the folder looked at, and the two ways to fill one."""
    return (
        f"no observer data in {data_dir}: the observer writes it during agent sessions. "
        "To get some, run a session in this project with the observer installed "
        "(`hookchain install`, then use Claude Code here), or replay a recorded one: "
        "`hookchain replay TRANSCRIPT --into DIR`, then `--data-dir DIR/observer`."
    )


def read_log(data_dir: Path) -> LogContents:
    """All records of all month files; a torn or foreign line is counted, never guessed at."""
    records: list[dict[str, Any]] = []
    unreadable = 0
    for path in log_files(data_dir):
        with path.open("rb") as stream:
            for raw in stream:
                try:
                    value = json.loads(raw)
                except ValueError:
                    unreadable += 1
                    continue
                if isinstance(value, dict) and isinstance(value.get("record"), str):
                    records.append(value)
                else:
                    unreadable += 1
    return LogContents(records=tuple(records), unreadable_lines=unreadable)
