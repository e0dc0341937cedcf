"""`hookchain observer …` as a person runs it: the real console script in a subprocess."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from cli_kit import hookchain


def _tree(root: Path) -> set[Path]:
    return {path.relative_to(root) for path in root.rglob("*")}


def test_status_in_a_folder_without_a_log_creates_nothing_and_says_how(tmp_path: Path) -> None:
    hookchain(["--help"], tmp_path)  # writes the empty hookchain.toml the helper needs
    before = _tree(tmp_path)
    done = hookchain(["observer", "status"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert _tree(tmp_path) == before
    assert "Traceback" not in done.stderr
    message = done.stderr
    assert "no observer data" in message
    assert str(tmp_path / ".hookchain" / "observer") in message
    assert "hookchain replay" in message and "--into" in message


def test_status_with_a_missing_data_dir_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "observer"
    done = hookchain(["observer", "status", "--data-dir", str(missing)], tmp_path)
    assert done.returncode == 1
    assert not (tmp_path / "nowhere").exists()
    assert f"no observer data in {missing}" in done.stderr


def test_outcome_without_a_log_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = hookchain(
        ["observer", "outcome", "ep-1", "success", "--data-dir", str(missing)], tmp_path
    )
    assert done.returncode == 1
    assert not missing.exists()
    assert "no observer data" in done.stderr


def test_dashboard_on_a_busy_port_names_the_port_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        try:
            done = hookchain(
                ["observer", "dashboard", "--port", str(port), "--data-dir", str(tmp_path)],
                tmp_path,
                timeout=60,
            )
        except subprocess.TimeoutExpired as error:  # pragma: no cover - the old behaviour hangs
            raise AssertionError("the dashboard started on a busy port") from error
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert str(port) in lines[0] and "--port" in lines[0]
