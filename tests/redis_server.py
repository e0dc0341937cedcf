"""Start and stop a throwaway redis-server on a free loopback port, for tests and benchmarks."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import ModuleType, TracebackType
from typing import NoReturn

SERVER_PACKAGE = "redis-server"  # the Debian package .ci/run installs


class RedisServerMissing(RuntimeError):
    """No redis-server binary (or no redis client package) on this machine."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(port: int, password: str | None) -> bool:
    request = b""
    if password is not None:
        request += f"AUTH {password}\r\n".encode()
    request += b"PING\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(request)
            reply = b""
            while b"PONG" not in reply:
                chunk = conn.recv(256)
                if not chunk:
                    return False
                reply += chunk
            return True
    except OSError:
        return False


class RedisServer:
    """One redis-server process in its own directory; `stop()` saves, `start()` reloads."""

    def __init__(self, workdir: Path, *, password: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RedisServerMissing(
                f"redis-server is not installed (Debian package {SERVER_PACKAGE!r})"
            )
        self.binary = binary
        self.workdir = workdir
        self.password = password
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = "" if self.password is None else f":{self.password}@"
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _command(self) -> list[str]:
        command = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.workdir),
            "--dbfilename", "dump.rdb",
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--logfile", str(self.workdir / "redis.log"),
        ]  # fmt: skip
        if self.password is not None:
            command += ["--requirepass", self.password]
        return command

    def start(self, *, attempts: int = 3, wait_s: float = 10.0) -> None:
        """Start on the previous port if there was one (a restart), else on a free one."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        fixed_port = self.port != 0
        for _ in range(attempts):
            if not fixed_port:
                self.port = _free_port()
            self._process = subprocess.Popen(
                self._command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            )
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and self._process.poll() is None:
                if _answers(self.port, self.password):
                    return
                time.sleep(0.02)
            self._halt()
        log = self.workdir / "redis.log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"redis-server did not start on port {self.port}:\n{tail}")

    def stop(self) -> None:
        """Shut down after saving the data set, so a later `start()` finds the same keys."""
        if not self.running:
            return
        auth = b"" if self.password is None else f"AUTH {self.password}\r\n".encode()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as conn:
                conn.sendall(auth + b"SHUTDOWN SAVE\r\n")
                while conn.recv(256):
                    pass
        except OSError:
            pass
        self._halt()

    def _halt(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def redis_client_module() -> ModuleType:
    """The `redis` package; without it, a failure in CI and a skip elsewhere (pytest only)."""
    return require_module(
        "redis", "the 'redis' Python package is not installed (pip install 'hookchain[redis]')"
    )


def require_module(name: str, reason: str) -> ModuleType:
    """An importable module; without it, a failure in CI and a skip elsewhere (pytest only)."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        _missing(reason)


def start_or_explain(workdir: Path, *, password: str | None = None) -> RedisServer:
    """A running server; without one, a failure in CI and a skip elsewhere (pytest only)."""
    redis_client_module()
    try:
        server = RedisServer(workdir, password=password)
    except RedisServerMissing as error:
        _missing(str(error))
    server.start()
    return server


def _missing(reason: str) -> NoReturn:
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must provide it", pytrace=False)
    pytest.skip(reason, allow_module_level=True)
