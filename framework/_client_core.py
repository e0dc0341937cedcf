"""The Claude Code hook client: forwards one hook payload to the warm host and relays its answer.

Started through `_client.py` (`<absolute python> -S <path>/_client.py EVENT`). It imports only
`_launch` (the wire names it shares with the host, stdlib-only too) and built-in modules (no
`os`, no `socket`, no `json`) because interpreter start-up is the floor of every hook: stdin's
bytes go to the host unparsed, and the host's answer comes back as exit code, stderr and stdout
bytes.

Wire format (one request per connection; the client half-closes after sending):
    request:  b"HC1 <version> <stamp> <event>\\n" + payload bytes
    answer:   b"<exit code> <stderr length>\\n" + stderr bytes + stdout bytes
              or b"R\\n": the host is another version and is restarting.
"""

from __future__ import annotations

import _socket
import posix
import sys
import time

if __package__:  # imported as framework._client_core (`hookchain hook`, tests)
    from framework import _launch as wire
else:  # run through _client.py: a sibling, imported without the package
    import _launch as wire  # type: ignore[import-not-found, no-redef]

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` costs more to import than this whole client
    from typing import NoReturn

DEFAULT_DEADLINE_S = 2.0
ENDS_SESSION = "SessionEnd"
"""Never starts a host: a new one knows nothing of the session, and Claude Code gives this event
only 1.5 s in all."""
_CHUNK = 65536


def _read_stdin() -> bytes:
    parts: list[bytes] = []
    while True:
        chunk = posix.read(0, _CHUNK)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = posix.write(fd, view)
        view = view[written:]


def _exchange(socket_path: str, request: bytes) -> bytes:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(socket_path)
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        parts: list[bytes] = []
        while True:
            chunk = sock.recv(_CHUNK)
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
    finally:
        sock.close()


def _lock_is_held(path: str) -> bool:
    """Whether a host (perhaps still starting) holds the runtime dir's lock."""
    import fcntl  # only on the slow path: no host answered

    try:
        fd = posix.open(path, posix.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        posix.close(fd)
    return False


def _start_host() -> None:
    """Start `hookchain serve` detached: own session, no inherited stdio (Claude Code reads it)."""
    devnull = "/dev/null"
    actions = [
        (posix.POSIX_SPAWN_OPEN, 0, devnull, posix.O_RDONLY, 0),
        (posix.POSIX_SPAWN_OPEN, 1, devnull, posix.O_WRONLY, 0),
        (posix.POSIX_SPAWN_DUP2, 1, 2),
    ]
    argv = wire.host_argv("serve", "")
    posix.posix_spawn(sys.executable, argv, posix.environ, file_actions=actions, setsid=True)


def _deadline_s() -> float:
    raw = posix.environ.get(b"HOOKCHAIN_CONNECT_DEADLINE")
    try:
        return float(raw) if raw else DEFAULT_DEADLINE_S
    except ValueError:
        return DEFAULT_DEADLINE_S


GUARDS_TOOLS = ("PreToolUse", "BeforeTool")
"""Events whose exit 2 blocks the tool (Claude Code and Codex; Gemini CLI's BeforeTool)."""


def _native(event: str) -> str:
    """`codex:PreToolUse` → `PreToolUse`: other harnesses' events carry their harness first."""
    return event[event.find(":") + 1 :]


def _unreachable(event: str, why: str) -> int:
    closed = posix.environ.get(b"HOOKCHAIN_UNREACHABLE", b"open") == b"closed"
    if closed and _native(event) in GUARDS_TOOLS:
        message = f"hookchain: host unreachable ({why}); blocking this tool call "
        _write_all(2, (message + "because HOOKCHAIN_UNREACHABLE=closed\n").encode())
        return 2
    _write_all(2, f"hookchain: host unreachable ({why}); hook skipped\n".encode())
    return 0


def forward(event: str, payload: bytes) -> int:
    """Send the payload to the host (starting one if needed) and relay its answer; the exit code."""
    folder = wire.runtime_dir()
    socket_path = folder + "/" + wire.SOCKET_NAME
    header = f"{wire.PROTOCOL} {wire.VERSION} {wire.client_stamp(__file__)} {event or '-'}\n"
    request = header.encode() + payload
    deadline = time.monotonic() + _deadline_s()
    next_start = 0.0
    why = "no answer"
    while True:
        try:
            answer = _exchange(socket_path, request)
        except (FileNotFoundError, ConnectionRefusedError) as error:
            why = type(error).__name__
            answer = b""
        except OSError as error:
            why = type(error).__name__
            answer = b""
        if answer == b"R\n":
            why = "host restarting for a new version"
        elif answer:
            parsed = wire.parse_answer(answer)
            if parsed is None:
                return _unreachable(event, "unreadable answer")
            code, stderr, stdout = parsed
            if stderr:
                _write_all(2, stderr)
            if stdout:
                _write_all(1, stdout)
            return code
        now = time.monotonic()
        if now >= deadline or _native(event) == ENDS_SESSION:
            return _unreachable(event, why)
        if now >= next_start and not _lock_is_held(folder + "/" + wire.LOCK_NAME):
            try:
                _start_host()
            except OSError as error:
                return _unreachable(event, f"cannot start host: {type(error).__name__}")
            next_start = now + 0.5
        time.sleep(0.005)


def main(argv: list[str]) -> int:
    args = argv[1:]
    if args and args[0] == "--no-daemon":
        event = args[1] if len(args) > 1 else ""
        posix.execv(sys.executable, wire.host_argv("once", event))
    return forward(args[0] if args else "", _read_stdin())


def run(argv: list[str]) -> NoReturn:
    """`main`, then exit at once: every byte went out through `posix.write`, so the interpreter's
    tear-down would only spend time on the way out."""
    posix._exit(main(argv))


if __name__ == "__main__":
    run(sys.argv)
