"""The Claude Code hook client: forwards one hook payload to the warm host and relays its answer.

Started through `_client.py` (`<absolute python> -S <path>/_client.py EVENT`). It imports only
`_launch` (the wire names it shares with the host, stdlib-only too) and built-in modules (no
`os`, no `socket`, no `json`) because interpreter start-up is the floor of every hook: stdin's
bytes go to the host unparsed, and the host's answer comes back as exit code, stderr and stdout
bytes.

Wire format (one request per connection; the client half-closes after sending):
    request:  b"HC1 <version> <stamp> <event>\\n<request id> <context length>\\n"
              + context (the hook process's cwd, then its environment as NUL-separated
                `NAME=value`: the host serves each session with its own project's settings)
              + payload bytes
    answer:   b"A" (the host took the request) + b"<exit code> <stderr length>\\n"
              + stderr bytes + stdout bytes,
              or b"R\\n": the host is another version and is restarting.

Every step (connect, send, read, waiting for a new host) is bounded by one deadline,
`HOOKCHAIN_CONNECT_DEADLINE` (default 2 s); past it the hook is skipped, or blocked for
PreToolUse with `HOOKCHAIN_UNREACHABLE=closed`. A request the host took (it sent b"A") is never
sent again: the host may have dispatched it before it died or hung.
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


def _exchange(socket_path: str, request: bytes, end: float) -> tuple[bool, bytes, str]:
    """Whether the host took the request, the answer's bytes, and the error that cut it short."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    parts: list[bytes] = []
    error = ""
    try:
        sock.settimeout(max(end - time.monotonic(), 0.001))
        sock.connect(socket_path)
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            chunk = sock.recv(_CHUNK)
            if not chunk:
                break
            parts.append(chunk)
    except OSError as failure:  # TimeoutError included: a hung host
        error = type(failure).__name__
    finally:
        sock.close()
    answer = b"".join(parts)
    if answer[:1] == wire.ACCEPTED:
        return True, answer[1:], error
    return False, answer, error


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


def _start_host() -> int:
    """Start `hookchain serve` detached: own session, no inherited stdio (Claude Code reads it)."""
    devnull = "/dev/null"
    actions = [
        (posix.POSIX_SPAWN_OPEN, 0, devnull, posix.O_RDONLY, 0),
        (posix.POSIX_SPAWN_OPEN, 1, devnull, posix.O_WRONLY, 0),
        (posix.POSIX_SPAWN_DUP2, 1, 2),
    ]
    argv = wire.host_argv("serve", "")
    return posix.posix_spawn(sys.executable, argv, posix.environ, file_actions=actions, setsid=True)


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


def _skipped(event: str, why: str) -> int:
    """The answer when the host cannot answer: skip the hook, or block a tool call if asked."""
    closed = posix.environ.get(b"HOOKCHAIN_UNREACHABLE", b"open") == b"closed"
    if closed and _native(event) in GUARDS_TOOLS:
        message = f"hookchain: {why}; blocking this tool call "
        _write_all(2, (message + "because HOOKCHAIN_UNREACHABLE=closed\n").encode())
        return 2
    _write_all(2, f"hookchain: {why}; hook skipped\n".encode())
    return 0


def _unreachable(event: str, why: str) -> int:
    return _skipped(event, f"host unreachable ({why})")


def _context() -> bytes:
    """The hook process's cwd and environment: the host serves the session as its project."""
    entries = [name + b"=" + value for name, value in posix.environ.items()]
    return b"\0".join([posix.getcwdb(), *entries])


def _start_failure(folder: str, pid: int) -> str:
    """Why the host started by this client ended at once; "" while it runs or lost the lock."""
    try:
        done, status = posix.waitpid(pid, posix.WNOHANG)
    except ChildProcessError:
        return ""
    if done == 0:
        return ""
    code = posix.waitstatus_to_exitcode(status)
    if code == 0:
        return ""  # another host holds the lock: it answers soon
    message, _age = wire.read_start_error(folder, time.time())
    return message or f"the host exited with code {code} at start; see {folder}/host.log"


def forward(event: str, payload: bytes) -> int:
    """Send the payload to the host (starting one if needed) and relay its answer; the exit code."""
    if len(payload) > wire.MAX_PAYLOAD_BYTES:
        limit = wire.MAX_PAYLOAD_BYTES >> 20
        return _skipped(event, f"hook payload too large ({len(payload)} bytes; limit {limit} MiB)")
    folder = wire.runtime_dir()
    socket_path = folder + "/" + wire.SOCKET_NAME
    context = _context()
    stamp = wire.client_stamp(__file__)
    header = f"{wire.PROTOCOL} {wire.VERSION} {stamp} {event or '-'}\n"
    header += f"{posix.urandom(8).hex()} {len(context)}\n"
    request = header.encode() + context + payload
    budget = _deadline_s()
    deadline = time.monotonic() + budget
    next_start = 0.0
    spawned = -1
    why = "no answer"
    while True:
        accepted, answer, error = _exchange(socket_path, request, deadline)
        if answer == wire.RESTART:
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
        elif accepted:
            # Sending it again could run the event twice, or kill the next host the same way.
            if error == "TimeoutError":
                return _unreachable(event, f"no answer within {budget:g} s: the host is hung")
            return _unreachable(event, f"the host ended while answering ({error or 'closed'})")
        elif error == "TimeoutError":
            why = f"no answer within {budget:g} s: the host is hung or overloaded"
        else:
            why = error or "no answer"
        now = time.monotonic()
        if now >= deadline or _native(event) == ENDS_SESSION:
            return _unreachable(event, why)
        if spawned > 0:
            failure = _start_failure(folder, spawned)
            if failure:
                return _unreachable(event, failure)
        if now >= next_start and not _lock_is_held(folder + "/" + wire.LOCK_NAME):
            recorded, age = wire.read_start_error(folder, time.time())
            if recorded and age < wire.START_BACKOFF_S:
                return _unreachable(event, f"{recorded}; last start failed {age:.0f} s ago")
            try:
                spawned = _start_host()
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
