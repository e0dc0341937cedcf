"""The append-only writer: private files, one scrubbed line per record, no torn lines."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from observer._log_file import (
    MonthLog,
    UnsafeLogPath,
    append_line,
    append_record,
    encode_line,
    ensure_private_dir,
    log_files,
    month_file_name,
    read_log,
)

JAN_2026_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def test_month_file_name_uses_the_utc_month() -> None:
    assert month_file_name(JAN_2026_MS) == "episodes-2026-01.jsonl"
    assert month_file_name(JAN_2026_MS - 1) == "episodes-2025-12.jsonl"


def test_month_file_name_follows_each_line_across_month_ends() -> None:
    feb_2026_ms = 1_769_904_000_000
    moments = [JAN_2026_MS, feb_2026_ms - 1, feb_2026_ms, JAN_2026_MS - 1, feb_2026_ms - 1]
    names = [month_file_name(ms) for ms in moments]
    assert names == [
        "episodes-2026-01.jsonl",
        "episodes-2026-01.jsonl",
        "episodes-2026-02.jsonl",
        "episodes-2025-12.jsonl",
        "episodes-2026-01.jsonl",
    ]


def test_append_record_creates_private_dir_and_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "deep" / "observer"
    path = append_record(data_dir, {"record": "episode", "id": "e1"}, JAN_2026_MS)
    assert path == data_dir / "episodes-2026-01.jsonl"
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"record": "episode", "id": "e1"}


def test_existing_loose_permissions_are_tightened(tmp_path: Path) -> None:
    data_dir = tmp_path / "observer"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    target = data_dir / month_file_name(JAN_2026_MS)
    target.write_text("")
    target.chmod(0o644)
    append_record(data_dir, {"record": "episode"}, JAN_2026_MS)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_lines_are_appended_never_rewritten(tmp_path: Path) -> None:
    for index in range(3):
        append_record(tmp_path, {"record": "episode", "id": f"e{index}"}, JAN_2026_MS)
    lines = (tmp_path / month_file_name(JAN_2026_MS)).read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["e0", "e1", "e2"]


def test_every_string_is_scrubbed_before_writing(tmp_path: Path) -> None:
    append_record(tmp_path, {"record": "episode", "task_ref": "mail bob@example.com"}, JAN_2026_MS)
    text = (tmp_path / month_file_name(JAN_2026_MS)).read_text()
    assert "bob@example.com" not in text
    assert "[EMAIL]" in text


def test_a_newline_inside_a_value_stays_on_one_line() -> None:
    line = encode_line({"record": "episode", "note": "a\nb"})
    assert line.count(b"\n") == 1


def test_append_line_refuses_partial_or_multiple_lines(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        append_line(tmp_path / "x.jsonl", b"no newline")
    with pytest.raises(ValueError):
        append_line(tmp_path / "x.jsonl", b"two\nlines\n")


def test_append_line_refuses_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("")
    link = tmp_path / "episodes-2026-01.jsonl"
    link.symlink_to(victim)
    with pytest.raises(OSError):
        append_line(link, b"{}\n")
    assert victim.read_text() == ""


def test_data_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "observer"
    not_a_dir.write_text("")
    with pytest.raises((UnsafeLogPath, FileExistsError)):
        append_record(not_a_dir, {"record": "episode"}, JAN_2026_MS)


def test_data_dir_that_is_a_symlink_to_a_private_dir_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    link = tmp_path / "observer"
    link.symlink_to(elsewhere)
    with pytest.raises(UnsafeLogPath):
        append_record(link, {"record": "episode"}, JAN_2026_MS)
    assert list(elsewhere.iterdir()) == []


def test_read_log_counts_torn_and_foreign_lines(tmp_path: Path) -> None:
    append_record(tmp_path, {"record": "episode", "id": "a"}, JAN_2026_MS)
    path = tmp_path / month_file_name(JAN_2026_MS)
    with path.open("ab") as stream:
        stream.write(b'{"record": "epi\n[1, 2]\n')
    append_record(tmp_path, {"record": "outcome", "id": "b"}, JAN_2026_MS - 1)
    contents = read_log(tmp_path)
    assert [record["id"] for record in contents.records] == ["b", "a"]
    assert contents.unreadable_lines == 2
    assert [file.name for file in log_files(tmp_path)] == [
        "episodes-2025-12.jsonl",
        "episodes-2026-01.jsonl",
    ]


def _lines(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_bytes().splitlines()]


def test_month_log_keeps_appending_lines_to_the_month_file(tmp_path: Path) -> None:
    log = MonthLog()
    data_dir = tmp_path / "observer"
    first = log.append(data_dir, {"record": "episode", "id": "a"}, JAN_2026_MS)
    second = log.append(data_dir, {"record": "episode", "id": "b"}, JAN_2026_MS + 1)
    earlier = log.append(data_dir, {"record": "episode", "id": "c"}, JAN_2026_MS - 1)
    log.close()
    assert first == second == data_dir / "episodes-2026-01.jsonl"
    assert earlier == data_dir / "episodes-2025-12.jsonl"
    assert _lines(first) == ["a", "b"]
    assert _lines(earlier) == ["c"]
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(first.stat().st_mode) == 0o600


def test_month_log_follows_a_file_replaced_or_removed_under_it(tmp_path: Path) -> None:
    log = MonthLog()
    path = log.append(tmp_path, {"record": "episode", "id": "a"}, JAN_2026_MS)
    path.rename(tmp_path / "rotated.jsonl")
    # Another process starts the file afresh at the same path.
    append_record(tmp_path, {"record": "episode", "id": "b"}, JAN_2026_MS)
    log.append(tmp_path, {"record": "episode", "id": "c"}, JAN_2026_MS)
    path.unlink()
    log.append(tmp_path, {"record": "episode", "id": "d"}, JAN_2026_MS)
    log.close()
    # The kept descriptor would have written c and d after a in the rotated file.
    assert _lines(tmp_path / "rotated.jsonl") == ["a"]
    assert _lines(path) == ["d"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_month_log_tightens_a_loosened_file_before_the_next_line(tmp_path: Path) -> None:
    log = MonthLog()
    path = log.append(tmp_path, {"record": "episode", "id": "a"}, JAN_2026_MS)
    path.chmod(0o644)
    log.append(tmp_path, {"record": "episode", "id": "b"}, JAN_2026_MS)
    log.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _lines(path) == ["a", "b"]


def test_month_log_confirms_a_folder_once_at_its_first_line_and_again_at_a_reopen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import observer._log_file as log_file

    confirmed: list[Path] = []
    real = log_file.ensure_private_dir

    def counting(directory: Path, **options: bool) -> None:
        confirmed.append(directory)
        real(directory, **options)

    monkeypatch.setattr(log_file, "ensure_private_dir", counting)
    log = MonthLog()
    data_dir = tmp_path / "observer"
    path = log.append(data_dir, {"record": "episode", "id": "a"}, JAN_2026_MS)
    assert confirmed == [data_dir]
    log.append(data_dir, {"record": "episode", "id": "b"}, JAN_2026_MS)
    assert confirmed == [data_dir]
    data_dir.chmod(0o755)
    path.unlink()
    log.append(data_dir, {"record": "episode", "id": "c"}, JAN_2026_MS)
    log.close()
    # The reopen confirms the folder again, and tightens it.
    assert confirmed == [data_dir, data_dir]
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert _lines(path) == ["c"]


def _lstat_counter(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths looked up with `os.lstat` or `os.stat` (which `Path.lstat` uses)."""
    looked_up: list[str] = []
    real_lstat, real_stat = os.lstat, os.stat

    def counting_lstat(path: str | os.PathLike[str]) -> os.stat_result:
        looked_up.append(os.fspath(path))
        return real_lstat(path)

    def counting_stat(
        path: str | os.PathLike[str], *, follow_symlinks: bool = True
    ) -> os.stat_result:
        looked_up.append(os.fspath(path))
        return real_stat(path, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(os, "lstat", counting_lstat)
    monkeypatch.setattr(os, "stat", counting_stat)
    return looked_up


def test_a_folder_likely_new_is_created_before_it_is_looked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "observer"
    looked_up = _lstat_counter(monkeypatch)
    log = MonthLog()
    path = log.write(data_dir, b'{"id":"a"}\n', JAN_2026_MS, durable=False, new_folder_likely=True)
    log.close()
    # Looked up once, after its creation, to confirm it (not first as well, to find it missing).
    assert looked_up.count(str(data_dir)) == 1
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert path.read_bytes() == b'{"id":"a"}\n'


def _folder_outcome(folder: Path, likely_new: bool) -> str:
    try:
        ensure_private_dir(folder, likely_new=likely_new)
    except Exception as error:
        return type(error).__name__
    return oct(stat.S_IMODE(folder.stat().st_mode))


@pytest.mark.parametrize("case", ["missing", "private", "loose", "no_parent", "symlink", "file"])
def test_a_folder_likely_new_ends_as_the_usual_way_ends(tmp_path: Path, case: str) -> None:
    outcomes = []
    for likely_new in (False, True):
        root = tmp_path / str(likely_new)
        root.mkdir()
        folder = root / "observer"
        if case == "private":
            folder.mkdir(mode=0o700)
        elif case == "loose":
            folder.mkdir()
            folder.chmod(0o755)
        elif case == "no_parent":
            folder = root / "deeper" / "observer"
        elif case == "symlink":
            (root / "elsewhere").mkdir(mode=0o700)
            folder.symlink_to(root / "elsewhere")
        elif case == "file":
            folder.write_bytes(b"")
        outcomes.append(_folder_outcome(folder, likely_new))
    assert outcomes[0] == outcomes[1]
    if case not in ("symlink", "file"):
        assert outcomes[1] == "0o700"


def test_month_log_refuses_a_symlink_put_in_the_files_place(tmp_path: Path) -> None:
    log = MonthLog()
    path = log.append(tmp_path, {"record": "episode", "id": "a"}, JAN_2026_MS)
    target = tmp_path / "elsewhere.jsonl"
    path.rename(target)
    path.symlink_to(target)
    with pytest.raises(OSError):
        log.append(tmp_path, {"record": "episode", "id": "b"}, JAN_2026_MS)
    log.close()
    assert _lines(target) == ["a"]


def test_month_log_reopens_after_close_and_refuses_bad_folders(tmp_path: Path) -> None:
    log = MonthLog()
    path = log.append(tmp_path, {"record": "episode", "id": "a"}, JAN_2026_MS)
    log.close()
    log.close()
    log.append(tmp_path, {"record": "episode", "id": "b"}, JAN_2026_MS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    link = tmp_path / "linked"
    link.symlink_to(elsewhere)
    with pytest.raises(UnsafeLogPath):
        log.append(link, {"record": "episode", "id": "c"}, JAN_2026_MS)
    log.close()
    assert _lines(path) == ["a", "b"]
    assert list(elsewhere.iterdir()) == []


_WRITER_SCRIPT = """
import sys
from pathlib import Path
from observer._log_file import MonthLog, append_record

data_dir = sys.argv[1]
writer, lines, month_ms, kept = (int(value) for value in sys.argv[2:6])
log = MonthLog()
for index in range(lines):
    # Sizes from tiny to well past PIPE_BUF, so a torn write would show.
    padding = "x" * ((writer * 7919 + index * 104_729) % 70_000)
    record = {"record": "episode", "writer": writer, "index": index, "padding": padding}
    if kept:
        log.append(Path(data_dir), record, month_ms)
    else:
        append_record(Path(data_dir), record, month_ms)
log.close()
"""


@pytest.mark.parametrize("kept", [False, True], ids=["reopened", "kept-open"])
def test_concurrent_writer_processes_never_tear_or_interleave(tmp_path: Path, kept: bool) -> None:
    writers, lines = 4, 60
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _WRITER_SCRIPT,
                str(tmp_path),
                str(writer),
                str(lines),
                str(JAN_2026_MS),
                str(int(kept)),
            ],
            env={**os.environ, "PYTHONPATH": str(PACKAGE_ROOT)},
        )
        for writer in range(writers)
    ]
    for process in processes:
        assert process.wait(timeout=120) == 0
    raw = (tmp_path / month_file_name(JAN_2026_MS)).read_bytes()
    assert raw.endswith(b"\n")
    seen: dict[int, list[int]] = {writer: [] for writer in range(writers)}
    for line in raw.splitlines():
        record = json.loads(line)
        assert set(record["padding"]) <= {"x"}
        assert (
            len(record["padding"]) == (record["writer"] * 7919 + record["index"] * 104_729) % 70_000
        )
        seen[record["writer"]].append(record["index"])
    assert all(indexes == list(range(lines)) for indexes in seen.values())


def _short_writes(monkeypatch: pytest.MonkeyPatch, cut: int) -> list[int]:
    """The next `os.write` of the log writes only its first `cut` bytes (as on a full disk)."""
    import observer._log_file as log_file

    real_write = os.write
    calls: list[int] = []

    def short_once(descriptor: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(descriptor, bytes(data[:cut]))
        return real_write(descriptor, data)

    monkeypatch.setattr(log_file.os, "write", short_once)
    return calls


@pytest.mark.parametrize("cut", [1, 10, 0])
def test_a_short_write_never_glues_the_next_line_onto_its_fragment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int
) -> None:
    log = MonthLog()
    data_dir = tmp_path / "observer"
    log.append(data_dir, {"record": "episode", "id": "a"}, JAN_2026_MS)
    _short_writes(monkeypatch, cut)
    with pytest.raises(OSError, match="short write"):
        log.append(data_dir, {"record": "episode", "id": "torn"}, JAN_2026_MS)
    log.append(data_dir, {"record": "episode", "id": "b"}, JAN_2026_MS)
    log.close()
    contents = read_log(data_dir)
    assert [record["id"] for record in contents.records] == ["a", "b"]
    assert contents.unreadable_lines == (1 if cut else 0)


def test_a_fragment_left_by_another_writer_is_isolated_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "observer"
    path = append_record(data_dir, {"record": "episode", "id": "a"}, JAN_2026_MS)
    _short_writes(monkeypatch, 7)
    with pytest.raises(OSError, match="short write"):
        append_record(data_dir, {"record": "episode", "id": "torn"}, JAN_2026_MS)
    # A fresh process: the plain appender and a new MonthLog both see the fragment.
    append_record(data_dir, {"record": "episode", "id": "b"}, JAN_2026_MS)
    with path.open("ab") as stream:
        stream.write(b'{"record":"epi')
    log = MonthLog()
    log.append(data_dir, {"record": "episode", "id": "c"}, JAN_2026_MS)
    log.close()
    contents = read_log(data_dir)
    assert [record["id"] for record in contents.records] == ["a", "b", "c"]
    assert contents.unreadable_lines == 2
