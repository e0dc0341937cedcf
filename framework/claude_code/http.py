"""Claude Code http hooks: the warm host answers POSTs on 127.0.0.1, h11 on anyio streams.

Every request needs `Authorization: Bearer <token>`, the token being a random per-user secret in a
0600 file of hookchain's data dir. Errors are answered with 4xx codes, which Claude Code treats
as non-blocking, so a guard that must fail closed needs the command transport for PreToolUse.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs

import anyio
import h11
import structlog
from anyio.abc import SocketAttribute, SocketStream, TaskGroup

from framework.claude_code import mapping as cmap
from framework.core import files
from framework.core.settings import data_dir

_log = structlog.get_logger("hookchain.http")

MAX_BODY_BYTES = 1024 * 1024
READ_TIMEOUT_S = 10.0
TOKEN_FILE = "http-token"
PORT_FILE = "http-port"
ROUTE = "/hook"
_REASONS = {
    200: b"OK",
    400: b"Bad Request",
    401: b"Unauthorized",
    403: b"Forbidden",
    404: b"Not Found",
    405: b"Method Not Allowed",
    413: b"Content Too Large",
}


class PayloadAnswerer(Protocol):
    """What answers a parsed payload: the projects' router (or one bridge)."""

    async def answer_payload(self, payload: dict[str, Any]) -> cmap.HookAnswer: ...


class _TooLarge(Exception):
    def __init__(self, size: int, event: str | None) -> None:
        super().__init__(f"body over {MAX_BODY_BYTES} bytes")
        self.size = size
        self.event = event


@dataclass(frozen=True, slots=True)
class HttpCredentials:
    port: int
    token: str


class CredentialsError(RuntimeError):
    """The token file is missing, open to others or unreadable; the message says which."""


def token_path(base: Path | None = None) -> Path:
    return (base or data_dir()) / TOKEN_FILE


def _private_dir(path: Path) -> None:
    # Only ownership is required of the data dir here (it may be one a person opened to a
    # group on purpose); the credentials inside it are private files.
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_uid != os.getuid():
        raise CredentialsError(f"{path} is not owned by this user")


def _read_private(path: Path) -> str:
    return files.read_private(path, CredentialsError).strip()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ensure_credentials(base: Path | None = None) -> HttpCredentials:
    """The token and port, created on first use: a random token, and a port chosen and recorded."""
    folder = base or data_dir()
    _private_dir(folder)
    token_file = folder / TOKEN_FILE
    if not token_file.exists():
        files.write_private(token_file, secrets.token_urlsafe(32) + "\n", exclusive=True)
    port_file = folder / PORT_FILE
    configured = os.environ.get("HOOKCHAIN_HTTP_PORT")
    if configured:
        port = int(configured)
    elif port_file.exists():
        port = int(_read_private(port_file))
    else:
        port = _free_port()
        files.write_private(port_file, f"{port}\n")
    return HttpCredentials(port=port, token=_read_private(token_file))


def load_credentials(base: Path | None = None) -> HttpCredentials | None:
    """The credentials when http hooks were set up (`install --transport http`), else None."""
    folder = base or data_dir()
    if not (folder / TOKEN_FILE).exists():
        return None
    return ensure_credentials(folder)


def _too_large_payload(event: str | None, size: int) -> dict[str, Any]:
    """The socket's "too large" answer as an http hook's JSON: a denial when fail-closed."""
    answer = cmap.too_large_answer(event, size, os.environ)
    reason = answer.stderr.strip()
    if answer.exit_code == 2:
        specific = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        return {"hookSpecificOutput": specific}
    return {"systemMessage": reason}


def _is_loopback(address: Any) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _drain(stream: SocketStream) -> None:
    """Read what the client still sends after an early refusal: closing a socket with unread
    data resets the connection, and the client would never see the status it was given."""
    await stream.send_eof()
    received = 0
    with anyio.move_on_after(2.0):
        while received <= 2 * MAX_BODY_BYTES:
            received += len(await stream.receive(65536))


class _Reject(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class HttpFrontend:
    """Answers `POST /hook` with the bridge the socket uses: same chains, same suspended calls."""

    def __init__(self, bridge: PayloadAnswerer, credentials: HttpCredentials) -> None:
        self.bridge = bridge
        self.credentials = credentials
        self._expected = f"Bearer {credentials.token}".encode()
        self.rejected = 0

    async def serve(
        self, task_group: TaskGroup, *, task_status: Any = anyio.TASK_STATUS_IGNORED
    ) -> None:
        listener = await anyio.create_tcp_listener(
            local_host="127.0.0.1", local_port=self.credentials.port, reuse_port=False
        )
        task_status.started()
        async with listener:
            await listener.serve(self.handle, task_group=task_group)

    async def handle(self, stream: SocketStream) -> None:
        async with stream:
            connection = h11.Connection(h11.SERVER, max_incomplete_event_size=16 * 1024)
            unread = False  # an early answer leaves the rest of the request on the socket
            try:
                if not _is_loopback(stream.extra(SocketAttribute.remote_address)):
                    raise _Reject(403, "only loopback clients are served")
                with anyio.fail_after(READ_TIMEOUT_S):
                    request, body = await self._read(stream, connection)
                status, payload = await self._answer(request, body)
            except _TooLarge as too_large:
                # A 413 would be non-blocking without a word: answer it as the socket does.
                status, unread = 200, True
                payload = _too_large_payload(too_large.event, too_large.size)
            except _Reject as rejection:
                self.rejected += 1
                status, payload = rejection.status, {"error": str(rejection)}
            except (h11.RemoteProtocolError, TimeoutError):
                status, payload = 400, {"error": "malformed or incomplete HTTP request"}
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return
            with contextlib.suppress(Exception):
                await self._send(stream, connection, status, payload)
                if unread or status >= 400:
                    await _drain(stream)

    async def _read(
        self, stream: SocketStream, connection: h11.Connection
    ) -> tuple[h11.Request, bytes]:
        request: h11.Request | None = None
        event_name: str | None = None
        parts: list[bytes] = []
        size = 0
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await stream.receive(65536))
                continue
            if isinstance(event, h11.Request):
                request = event
                event_name = self._check_head(event)
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > MAX_BODY_BYTES:
                    raise _TooLarge(size, event_name)
                parts.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage) and request is not None:
                return request, b"".join(parts)
            elif isinstance(event, h11.ConnectionClosed):
                raise anyio.EndOfStream

    def _check_head(self, request: h11.Request) -> str | None:
        """Refuse a bad request head; the event named in the URL (`/hook?event=PreToolUse`)."""
        headers = dict(request.headers)
        given = headers.get(b"authorization", b"")
        if not hmac.compare_digest(given, self._expected):
            raise _Reject(401, "missing or wrong bearer token")
        if request.target.split(b"?")[0] != ROUTE.encode():
            raise _Reject(404, f"hook requests go to POST {ROUTE}")
        if request.method != b"POST":
            raise _Reject(405, "hook requests are POSTs")
        length = headers.get(b"content-length")
        query = parse_qs(request.target.partition(b"?")[2].decode(errors="replace"))
        event_name = (query.get("event") or [""])[0] or None
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            raise _TooLarge(int(length), event_name)
        return event_name

    async def _answer(self, request: h11.Request, body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            payload = cmap.parse_payload(body)
        except cmap.PayloadError as error:
            return 400, {"error": str(error)}
        answer = await self.bridge.answer_payload(payload)
        if not answer.stdout:
            return 200, {}
        decoded = json.loads(answer.stdout)
        return 200, decoded if isinstance(decoded, dict) else {}

    async def _send(
        self, stream: SocketStream, connection: h11.Connection, status: int, payload: dict[str, Any]
    ) -> None:
        body = json.dumps(payload).encode()
        headers = [
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
            ("connection", "close"),
        ]
        response = h11.Response(
            status_code=status, headers=headers, reason=_REASONS.get(status, b"")
        )
        await stream.send(connection.send(response) + connection.send(h11.Data(data=body)))
        await stream.send(connection.send(h11.EndOfMessage()))
