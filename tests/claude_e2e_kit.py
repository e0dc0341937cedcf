"""Acting as Claude Code in tests: a private runtime dir, real client processes, host clean-up."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from framework import _client
from framework.claude_code import daemon as _daemon

TESTS = Path(__file__).resolve().parent
CLIENT = str(Path(_client.__file__).resolve())
PAYLOADS = TESTS.parent.parent / "shared" / "corpus" / "hook-payloads"


def payload_lines() -> list[tuple[str, str]]:
    """Every real hook payload as its file's name and its line; fails clearly without the corpus."""
    if not PAYLOADS.is_dir():
        pytest.fail(f"the hook payload corpus is missing: expected {PAYLOADS} beside the clone")
    return [
        (path.name, line)
        for path in sorted(PAYLOADS.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


@dataclass
class HookResult:
    code: int
    stdout: str
    stderr: str

    @property
    def answer(self) -> dict[str, Any]:
        return json.loads(self.stdout) if self.stdout else {}


@dataclass
class ClaudeSide:
    """One private host environment; every host it starts is stopped at the end."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def runtime(self) -> Path:
        return Path(self.env["HOOKCHAIN_RUNTIME_DIR"])

    @property
    def probe_log(self) -> Path:
        return Path(self.env["CLAUDE_PROBE_LOG"])

    def options(self) -> _daemon.ServeOptions:
        return _daemon.ServeOptions.from_env(self.env)

    def start(
        self, event: str, payload: Mapping[str, Any] | bytes, **env: str
    ) -> subprocess.Popen[bytes]:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        process = subprocess.Popen(
            [sys.executable, "-S", CLIENT, event],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**self.env, **env},
        )
        assert process.stdin is not None
        process.stdin.write(data)
        process.stdin.close()
        process.stdin = None  # written and closed: `communicate` must not flush it again
        return process

    @staticmethod
    def finish(process: subprocess.Popen[bytes], timeout: float = 30) -> HookResult:
        out, err = process.communicate(timeout=timeout)
        return HookResult(process.returncode, out.decode(), err.decode())

    def hook(self, event: str, payload: Mapping[str, Any] | bytes, **env: str) -> HookResult:
        return self.finish(self.start(event, payload, **env))

    def no_daemon(self, event: str, payload: Mapping[str, Any]) -> HookResult:
        """`_client.py --no-daemon EVENT`: the chain in the client's own process."""
        done = subprocess.run(
            [sys.executable, "-S", CLIENT, "--no-daemon", event],
            input=json.dumps(payload).encode(),
            env=self.env,
            capture_output=True,
            timeout=60,
        )
        return HookResult(done.returncode, done.stdout.decode(), done.stderr.decode())

    def host_pid(self) -> int | None:
        status = _daemon.request_control(self.options(), "@status")
        return None if status is None else int(status["pid"])

    def probe(self, kind: str) -> list[list[Any]]:
        if not self.probe_log.exists():
            return []
        entries = [json.loads(line) for line in self.probe_log.read_text().splitlines()]
        return [entry for entry in entries if entry[0] == kind]

    def lock_pid(self) -> int | None:
        try:
            text = (self.runtime / _daemon.LOCK_NAME).read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def wait_gone(self, pid: int, timeout: float = 10) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.02)
        return False


def _reap_host(side: ClaudeSide) -> None:
    pid = side.lock_pid()
    _daemon.stop_host(side.options(), wait_s=5)
    if pid is not None and not side.wait_gone(pid, timeout=5):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def claude_side(**extra_env: str) -> Iterator[ClaudeSide]:
    # A short path: Unix socket paths are limited to about 100 bytes.
    root = Path(tempfile.mkdtemp(prefix="hc-"))
    runtime = root / "rt"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "HOOKCHAIN_RUNTIME_DIR": str(runtime),
        "HOOKCHAIN_DATA_DIR": str(root / "data"),
        "HOOKCHAIN_STORE": "memory://",
        "HOOKCHAIN_PLUGINS": "claude-probe",
        "HOOKCHAIN_PLUGIN_MODULES": "claude_probe_plugin",
        "HOOKCHAIN_CONNECT_DEADLINE": "20",
        "HOOKCHAIN_IDLE_EXIT": "120",
        "PYTHONPATH": str(TESTS),
        "CLAUDE_PROBE_LOG": str(root / "probe.jsonl"),
        **extra_env,
    }
    side = ClaudeSide(root=root, env=env)
    try:
        yield side
    finally:
        _reap_host(side)
        shutil.rmtree(root, ignore_errors=True)


SESSION = "sess-a"


def pre(
    command: str, tool_use_id: str | None = "toolu_1", session: str = SESSION
) -> dict[str, Any]:
    """A Bash PreToolUse payload; without `tool_use_id` it is one from before Claude Code 2.0.43."""
    payload: dict[str, Any] = {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    if tool_use_id is not None:
        payload["tool_use_id"] = tool_use_id
    return payload


def post(of: Mapping[str, Any]) -> dict[str, Any]:
    return {**of, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "ok"}}
