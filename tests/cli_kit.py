"""Running the real `hookchain` console script as a person does: in a pipe or on a terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

HOOKCHAIN = str(Path(sys.executable).with_name("hookchain"))
"""The console script `pip install` made for this interpreter: the entry point people run."""


def environment(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without any HOOKCHAIN_* or plugin option, data kept in `home`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HOOKCHAIN_", "WRITE_GUARD_", "LOOP_BREAKER_", "OBSERVER_"))
        and not key.startswith("REFUSAL_WATCH_")
    }
    env["HOOKCHAIN_DATA_DIR"] = str(home / "data")
    env["HOOKCHAIN_CONFIG"] = str(home / "hookchain.toml")
    env.update(extra or {})
    return env


def hookchain(
    args: list[str],
    home: Path,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`hookchain ARGS` in `home` (its cwd), stdout and stderr captured (not a terminal)."""
    config = home / "hookchain.toml"
    if not config.exists():
        config.write_text("", encoding="utf-8")
    return subprocess.run(
        [HOOKCHAIN, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=home,
        env=environment(home, env),
        timeout=timeout,
        check=False,
    )


def on_terminal(
    args: list[str], home: Path, env: Mapping[str, str] | None = None, timeout: float = 120
) -> tuple[int, str]:
    """`hookchain ARGS` with stdout and stderr on one pseudo-terminal: (exit code, output)."""
    config = home / "hookchain.toml"
    if not config.exists():
        config.write_text("", encoding="utf-8")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [HOOKCHAIN, *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        cwd=home,
        env={**environment(home, env), "COLUMNS": "100", "TERM": "xterm"},
    )
    os.close(follower)
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                output += chunk
            elif process.poll() is not None:
                break
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    return code, output.decode(errors="replace").replace("\r\n", "\n")


def plugins_folder(folder: Path, files: Mapping[str, str]) -> Path:
    """A new folder of single-file plugins (for HOOKCHAIN_PLUGINS_DIR): file name → source."""
    folder.mkdir()
    for name, source in files.items():
        (folder / name).write_text(source, encoding="utf-8")
    return folder
