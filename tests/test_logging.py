"""Logging: JSON lines on stderr when it is not a terminal, console lines on a terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

SCRIPT = """
import structlog
from framework.core.logging import configure_logging
configure_logging({level!r})
log = structlog.get_logger("hookchain.test")
log.debug("quiet detail", n=1)
log.warning("something to see", plugin="demo")
"""


def run(level: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(level=level)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_json_lines_on_a_pipe_and_nothing_on_stdout() -> None:
    done = run("warning")
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    record = json.loads(line)
    assert record["event"] == "something to see"
    assert record["plugin"] == "demo"
    assert record["level"] == "warning"


def test_the_level_filters_debug_lines() -> None:
    lines = run("debug").stderr.splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["quiet detail", "something to see"]


def test_console_rendering_on_a_terminal() -> None:
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-c", SCRIPT.format(level="warning")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=follower,
            timeout=60,
            check=True,
        )
        os.close(follower)
        follower = -1
        output = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    text = output.decode()
    assert "something to see" in text
    assert not text.lstrip().startswith("{")
