"""The warm host behind `hookchain serve`: a per-user Unix-socket server that answers hook calls."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import structlog
from anyio.abc import SocketAttribute, SocketStream, TaskGroup

from framework import _launch as wire
from framework.claude_code import mapping as cmap
from framework.claude_code import native
from framework.claude_code.bridge import DEFAULT_SUSPEND_TIMEOUT_S, ClaudeBridge
from framework.claude_code.projects import CallContext, ProjectRouter, load_plugin_modules
from framework.core import files
from framework.core.host import Host

_log = structlog.get_logger("hookchain.serve")

MAX_REQUEST_BYTES = cmap.MAX_PAYLOAD_BYTES + 1024 * 1024
"""The payload limit plus room for the client's context (cwd and environment)."""
DEFAULT_IDLE_EXIT_S = 30 * 60.0
LOCK_NAME = wire.LOCK_NAME
LOG_NAME = "host.log"
_PEERCRED = struct.Struct("3i")
_serving = False
"""Set once this process serves: a later failure is no start failure for clients to report."""


class RuntimeDirError(RuntimeError):
    """The runtime dir is not private to this user; the host refuses to use it."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """How a host runs; each field has a `HOOKCHAIN_*` environment variable."""

    runtime_dir: Path
    idle_exit_s: float = DEFAULT_IDLE_EXIT_S
    suspend_timeout_s: float = DEFAULT_SUSPEND_TIMEOUT_S
    plugin_modules: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ServeOptions:
        env = os.environ if environ is None else environ
        modules = env.get("HOOKCHAIN_PLUGIN_MODULES", "")
        return cls(
            runtime_dir=Path(wire.runtime_dir({k.encode(): v.encode() for k, v in env.items()})),
            idle_exit_s=float(env.get("HOOKCHAIN_IDLE_EXIT", DEFAULT_IDLE_EXIT_S)),
            suspend_timeout_s=float(
                env.get("HOOKCHAIN_SUSPEND_TIMEOUT", DEFAULT_SUSPEND_TIMEOUT_S)
            ),
            plugin_modules=tuple(m.strip() for m in modules.split(",") if m.strip()),
        )

    @property
    def socket_path(self) -> Path:
        return self.runtime_dir / wire.SOCKET_NAME


def ensure_private_dir(path: Path) -> Path:
    """Create `path` 0700, or check an existing one is this user's and closed to others."""
    return files.ensure_private_dir(path, RuntimeDirError)


def host_stamp() -> str:
    """What a client must send to talk to this host: the protocol version and the client file."""
    return f"{wire.VERSION} {wire.client_stamp(wire.client_path())}"


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid (Linux SO_PEERCRED), or None where the OS does not tell."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, option, _PEERCRED.size))
    return int(uid)


def encode_answer(answer: cmap.HookAnswer) -> bytes:
    stderr = answer.stderr.encode()
    return f"{answer.exit_code} {len(stderr)}\n".encode() + stderr + answer.stdout.encode()


ANSWERED_MEMORY = 1024
"""How many request ids are remembered with their answers, so a retried request is answered
again rather than dispatched twice."""


class _Request:
    """A request id's answer, awaited by any retry of the same request."""

    __slots__ = ("answer", "done")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.answer = b""


class Server:
    """One host per user: the socket, the projects' hosts, idle exit and status.

    `host`, when given, serves every call (tests, embedding); otherwise each project gets its
    own host (see `projects`)."""

    def __init__(self, options: ServeOptions, host: Host | None = None) -> None:
        self.options = options
        self._fixed_host = host
        self.stamp = host_stamp()
        self.router: ProjectRouter | None = None
        self.in_flight = 0
        self.last_activity = time.monotonic()
        self.refused_peers = 0
        self.retried_requests = 0
        self.http_port: int | None = None
        self._http: Any = None
        self._requests: OrderedDict[str, _Request] = OrderedDict()
        self._task_group: TaskGroup | None = None

    @property
    def bridge(self) -> ClaudeBridge | None:
        """The bridge of the fixed host, when one was given."""
        return None if self.router is None else self.router.fixed_bridge

    def stop(self) -> None:
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()

    def status(self) -> dict[str, Any]:
        base: dict[str, Any] = {
            "pid": os.getpid(),
            "socket": str(self.options.socket_path),
            "version": wire.VERSION,
            "in_flight": self.in_flight,
            "refused_peers": self.refused_peers,
            "retried_requests": self.retried_requests,
            "idle_exit_s": self.options.idle_exit_s,
            "http_port": self.http_port,
            "uptime_s": round(time.monotonic() - self._started, 1),
        }
        if self.router is not None:
            base.update(self.router.status())
        return base

    async def run(self) -> None:
        """Serve until stopped, idle for too long, or replaced by a host of another version."""
        self._started = time.monotonic()
        path = self.options.socket_path
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        previous = os.umask(0o177)
        try:
            listener = await anyio.create_unix_listener(path)
        finally:
            os.umask(previous)
        path.chmod(0o600)
        identity = path.stat().st_ino
        try:
            async with anyio.create_task_group() as task_group, listener:
                self._task_group = task_group
                self.router = ProjectRouter(
                    task_group,
                    base_env=os.environ,
                    suspend_timeout=self.options.suspend_timeout_s,
                    fixed_host=self._fixed_host,
                    runtime_dir=str(self.options.runtime_dir),
                )
                task_group.start_soon(self._idle_watch, identity)
                await self._start_http(task_group)
                await listener.serve(self._handle, task_group=task_group)
        finally:
            with contextlib.suppress(OSError):
                if path.stat().st_ino == identity:
                    path.unlink()

    def _socket_is_ours(self, identity: int) -> bool:
        try:
            return self.options.socket_path.stat().st_ino == identity
        except OSError:
            return False

    async def _start_http(self, task_group: TaskGroup) -> str:
        """Serve http hooks too when they were set up; the socket keeps working if that fails.

        Called at start, on `@http` (sent by `install --transport http`) and now and then, so a
        transport switch takes effect without a restart. What happened, in words."""
        from framework.claude_code import http as _http

        if self._http is not None:
            return f"http hooks served on 127.0.0.1:{self.http_port}"
        try:
            credentials = _http.load_credentials()
        except (OSError, ValueError, _http.CredentialsError) as error:
            _log.warning("http hooks not served", error=str(error))
            return f"http hooks not served: {error}"
        if credentials is None or self.router is None:
            return "http hooks not set up (no token file)"
        frontend = _http.HttpFrontend(self.router, credentials)
        try:
            await task_group.start(frontend.serve, task_group)
        except OSError as error:
            _log.warning("http hooks not served", port=credentials.port, error=str(error))
            return f"http hooks not served: port {credentials.port}: {error}"
        self._http = frontend
        self.http_port = credentials.port
        return f"http hooks served on 127.0.0.1:{self.http_port}"

    async def _idle_watch(self, identity: int) -> None:
        period = max(0.05, min(5.0, self.options.idle_exit_s / 10))
        while True:
            await anyio.sleep(period)
            if not self._socket_is_ours(identity):
                _log.info("socket removed or replaced: host exits")
                self.stop()
                return
            if self._task_group is not None and self._http is None:
                await self._start_http(self._task_group)
            if self.router is not None:
                self.router.retire_stale()
            quiet = time.monotonic() - self.last_activity
            busy = self.in_flight or (self.router is not None and self.router.suspended_count)
            if quiet >= self.options.idle_exit_s and not busy:
                _log.info("idle: host exits", idle_s=round(quiet))
                self.stop()
                return

    async def _handle(self, stream: SocketStream) -> None:
        self.in_flight += 1
        self.last_activity = time.monotonic()
        try:
            async with stream:
                raw_socket = stream.extra(SocketAttribute.raw_socket)
                uid = peer_uid(raw_socket)
                if uid is not None and uid != os.getuid():
                    self.refused_peers += 1
                    _log.warning("refused a connection from another user", uid=uid)
                    return
                request = await _read_request(stream)
                if request is not None:
                    try:
                        answer, then_stop = await self._respond(request, stream)
                    except Exception as error:  # one request's failure never ends the host
                        _log.error("request failed", error_type=type(error).__name__)
                        failed = f"hookchain: host error ({type(error).__name__}); hook skipped\n"
                        answer, then_stop = encode_answer(cmap.HookAnswer(stderr=failed)), False
                    await stream.send(answer)
                    if then_stop:
                        self.stop()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the client went away (killed by Claude Code's timeout); nothing to answer
        finally:
            self.in_flight -= 1
            self.last_activity = time.monotonic()

    async def _respond(self, request: bytes, stream: SocketStream) -> tuple[bytes, bool]:
        """The answer's bytes, and whether the host stops once it is sent."""
        head, _, rest = request.partition(b"\n")
        parts = head.decode(errors="replace").split(" ")
        if len(parts) != 4 or parts[0] != wire.PROTOCOL:
            return encode_answer(
                cmap.HookAnswer(stderr="hookchain: unknown request format\n")
            ), False
        _, version, client_stamp, event = parts
        if event == "@status":
            return encode_answer(cmap.HookAnswer(stdout=json.dumps(self.status()))), False
        if event == "@stop":
            return encode_answer(cmap.HookAnswer(stdout='{"stopping": true}')), True
        if event == "@http":
            assert self._task_group is not None
            said = await self._start_http(self._task_group)
            reply = json.dumps({"http_port": self.http_port, "message": said})
            return encode_answer(cmap.HookAnswer(stdout=reply)), False
        if f"{version} {client_stamp}" != self.stamp:
            _log.info("client of another version: host restarts")
            return wire.RESTART, True
        second, _, rest = rest.partition(b"\n")
        fields = second.split(b" ")
        if len(fields) != 2 or not fields[1].isdigit():
            return encode_answer(
                cmap.HookAnswer(stderr="hookchain: unknown request format\n")
            ), False
        request_id = fields[0].decode(errors="replace")
        length = int(fields[1])
        context, body = CallContext.parse(rest[:length]), rest[length:]
        # Taken: from here on the client never sends this request again.
        await stream.send(wire.ACCEPTED)
        known = self._requests.get(request_id)
        if known is not None:
            self.retried_requests += 1
            await known.done.wait()
            return known.answer, False
        entry = self._requests[request_id] = _Request()
        while len(self._requests) > ANSWERED_MEMORY:
            self._requests.popitem(last=False)
        assert self.router is not None
        try:
            if len(body) > cmap.MAX_PAYLOAD_BYTES:
                answer = cmap.too_large_answer(
                    None if event == "-" else event, len(body), context.env or {}
                )
            else:
                answer = await self._route(body, event, context)
            entry.answer = encode_answer(answer)
        finally:
            entry.done.set()
        return entry.answer, False

    async def _route(self, body: bytes, event: str, context: CallContext) -> cmap.HookAnswer:
        """Claude Code's call to its project's host; another harness's (`codex:PreToolUse`)
        through its adapter first, to the same project's host."""
        assert self.router is not None
        if native.is_native(event):
            return await native.answer_native(self.router.bound(context), event, body)
        return await self.router.answer(body, None if event == "-" else event, context)


async def _read_request(stream: SocketStream) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = await stream.receive()
        except anyio.EndOfStream:
            return b"".join(parts)
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            limit = cmap.MAX_PAYLOAD_BYTES >> 20
            too_large = f"hookchain: request too large (limit {limit} MiB); hook skipped\n"
            await stream.send(encode_answer(cmap.HookAnswer(stderr=too_large)))
            return None
        parts.append(chunk)


@contextlib.contextmanager
def _exclusive_lock(runtime_dir: Path) -> Iterator[BinaryIO | None]:
    """The host lock: held for the host's life, released by the kernel even on SIGKILL."""
    fd = os.open(runtime_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    handle = os.fdopen(fd, "r+b")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield handle
    finally:
        handle.close()


def _log_to_file(runtime_dir: Path) -> None:
    """A detached host has no terminal: its log goes to a private file in the runtime dir."""
    fd = os.open(runtime_dir / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)


def _configure_logging(json_lines: bool = True) -> None:
    """Logs to stderr (never stdout: that is the answer), at HOOKCHAIN_LOG_LEVEL."""
    from framework.core.logging import configure_logging

    level = os.environ.get("HOOKCHAIN_LOG_LEVEL", "warning").lower()
    configure_logging(level, json=json_lines)


async def serve(options: ServeOptions, lock_fd: int = -1) -> int:
    """Run a host in this process until it stops; 0 also when another host already runs.

    `lock_fd` is the host lock when the caller took it already (the client's start-up path).
    """
    ensure_private_dir(options.runtime_dir)
    if lock_fd >= 0:
        held: contextlib.AbstractContextManager[BinaryIO | None] = contextlib.nullcontext(
            os.fdopen(lock_fd, "r+b")
        )
    else:
        held = _exclusive_lock(options.runtime_dir)
    with held as lock:
        if lock is None:
            return 0
        lock.truncate(0)
        lock.write(str(os.getpid()).encode())
        lock.flush()
        if not sys.stderr.isatty():
            _log_to_file(options.runtime_dir)
        _configure_logging()
        wire.clear_start_error(str(options.runtime_dir))
        global _serving
        _serving = True
        await Server(options).run()
    return 0


async def run_once(event: str, payload: bytes, options: ServeOptions) -> cmap.HookAnswer:
    """`--no-daemon`: one hook call in this process; a suspended call is cancelled afterwards."""
    plugins = load_plugin_modules(options.plugin_modules)
    async with Host(plugins=plugins) as host, anyio.create_task_group() as task_group:
        bridge = ClaudeBridge(host, task_group, suspend_timeout=options.suspend_timeout_s)
        answer = await native.answer(bridge, event, payload)
        bridge.cancel_all()
    return answer


def answer_once(event: str, payload: bytes) -> int:
    """`--no-daemon`: answer one hook call in this process and write the answer out; its code.

    Only the answer goes to stdout: Claude Code reads it as the hook's JSON."""
    _configure_logging(json_lines=False)
    answer = anyio.run(run_once, event, payload, ServeOptions.from_env())
    sys.stderr.write(answer.stderr)
    sys.stdout.write(answer.stdout)
    sys.stdout.flush()
    return answer.exit_code


def request_control(options: ServeOptions, op: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """Ask a running host for `@status` or `@stop`; None when no host answers."""
    path = str(options.socket_path)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(f"{wire.PROTOCOL} - - {op}\n".encode())
            sock.shutdown(socket.SHUT_WR)
            data = b"".join(iter(lambda: sock.recv(65536), b""))
    except OSError:
        return None
    parsed = wire.parse_answer(data)
    if parsed is None:
        return None
    try:
        answer = json.loads(parsed[2])
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def stop_host(options: ServeOptions, wait_s: float = 5.0) -> bool:
    """Stop the running host and wait until its lock is free; False when none was running."""
    if request_control(options, "@stop") is None:
        return False
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with _exclusive_lock(options.runtime_dir) as lock:
            if lock is not None:
                return True
        time.sleep(0.02)
    return True


def main(argv: Sequence[str], lock_fd: int = -1) -> int:
    """Entry of the detached host and of `--no-daemon`, started by the stdlib-only client."""
    mode = argv[0] if argv else "serve"
    if mode == "once":
        return answer_once(argv[1] if len(argv) > 1 else "", sys.stdin.buffer.read())
    options = ServeOptions.from_env()
    try:
        return anyio.run(serve, options, lock_fd)
    except RuntimeDirError as error:
        sys.stderr.write(f"hookchain: {error}\n")
        wire.record_start_error(str(options.runtime_dir), str(error))
        return 1
    except Exception as error:
        if _serving:
            _log.error("host failed", error_type=type(error).__name__, error=str(error))
            return 1
        # Kept for the clients and `hookchain status`: the log alone is where nobody looks.
        cause: BaseException = error
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
            cause = cause.exceptions[0]  # the cause, not anyio's wrapper
        message = f"the host failed to start: {type(cause).__name__}: {cause}"
        _log.error("host failed to start", error_type=type(error).__name__, error=str(error))
        wire.record_start_error(str(options.runtime_dir), message)
        return 1
