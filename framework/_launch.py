"""The stdlib-only start of the warm host, and the wire names the hook client and host share.

The client (`_client_core`) imports this as a sibling and starts the host as
`<python> <path>/_launch.py MODE EVENT`. Here the host takes its lock before any heavy import, so
a surplus start costs little; only then does it hand over to the daemon, named by module path the
way a console-script entry point is (`DAEMON`), so this module imports nothing of `framework` and
the daemon can import it for the shared names without a circle.
"""

from __future__ import annotations

import posix
import sys

PROTOCOL = "HC1"
VERSION = "2"
"""Bump when the wire format or the host's behaviour changes incompatibly."""

ACCEPTED = b"A"
"""The host's first byte once it has read a whole request and starts on it: a client that saw it
never sends that request again (the host may have dispatched it, even if it died after)."""
RESTART = b"R\n"
"""The whole answer of a host of another version: it stops; the client starts its own, resends."""
MAX_PAYLOAD_BYTES = 8 * 1024 * 1024
"""Larger payloads are answered "too large" (under the chosen fail mode) and never sent."""
START_ERROR_NAME = "start-error"
"""Why the last host start failed, with the fix; written by the host, shown by client and status."""
START_BACKOFF_S = 5.0
"""After a failed start, clients report it without starting another host for this long."""

SOCKET_NAME = "host.sock"
LOCK_NAME = "host.lock"
DAEMON = "framework.claude_code.daemon"
"""The module whose `main(argv, lock_fd=...)` serves, once the lock is held."""
CLIENT_NAME = "_client_core.py"
"""The client beside this file: its stamp names the code a host was started from."""


def client_path() -> str:
    return __file__[: __file__.rfind("/") + 1] + CLIENT_NAME


def runtime_dir(environ: dict[bytes, bytes] | None = None) -> str:
    """The per-user folder holding the host's socket, lock and log (the host creates it 0700)."""
    env = posix.environ if environ is None else environ
    chosen = env.get(b"HOOKCHAIN_RUNTIME_DIR")
    if chosen:
        return chosen.decode()
    xdg = env.get(b"XDG_RUNTIME_DIR")
    if xdg:
        return xdg.decode() + "/hookchain"
    return f"/tmp/hookchain-{posix.getuid()}"


def client_stamp(path: str) -> str:
    """Changes whenever this file is replaced, so a host started from older code is detected."""
    try:
        info = posix.stat(path)
    except OSError:
        return "0"
    return f"{info.st_size}-{info.st_mtime_ns}"


def private_to_user(info: posix.stat_result) -> bool:
    """The one rule for the host's private files and folders: this user's, closed to others."""
    return info.st_uid == posix.getuid() and not info.st_mode & 0o077


def _package_root() -> str:
    here = __file__
    return here[: here.rfind("/")].rsplit("/", 1)[0] or "/"


def host_argv(mode: str, event: str) -> list[str]:
    """How the client starts a host process: this file as a script, before any heavy import."""
    return [sys.executable, __file__, mode, event]


def host_main(mode: str, event: str) -> int:
    """Start the host, taking its lock before the heavy imports so a surplus start costs little."""
    import fcntl
    from importlib import import_module

    folder = runtime_dir()
    fd = -1
    try:
        posix.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        mode = "serve-unlocked"  # its parents are missing: the host creates them and locks
    if mode == "serve":
        problem = runtime_dir_problem(folder)
        if problem:
            record_start_error(folder, problem)
            return 1  # the host refuses a shared runtime dir; the client reports why
        fd = posix.open(folder + "/" + LOCK_NAME, posix.O_RDWR | posix.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # another host runs or is starting
    sys.path.insert(0, _package_root())
    code: int = import_module(DAEMON).main(
        ["once" if mode == "once" else "serve", event], lock_fd=fd
    )
    return code


def runtime_dir_problem(folder: str) -> str:
    """Why `folder` must not hold a host (not this user's, or open to others); "" when fine."""
    try:
        info = posix.stat(folder)
    except OSError as error:
        return f"runtime dir {folder} cannot be read ({type(error).__name__})"
    if private_to_user(info):
        return ""
    if info.st_uid != posix.getuid():
        return f"runtime dir {folder} belongs to uid {info.st_uid}, not to you; remove it"
    mode = f"{info.st_mode & 0o777:o}"
    return f"runtime dir {folder} is open to other users (mode {mode}); run: chmod 700 {folder}"


def record_start_error(folder: str, message: str) -> None:
    """Keep why this start failed where clients and `hookchain status` look (best effort)."""
    path = folder + "/" + START_ERROR_NAME
    try:
        fd = posix.open(path + ".tmp", posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC, 0o600)
        try:
            posix.write(fd, message.encode(errors="replace")[:4096])
        finally:
            posix.close(fd)
        posix.rename(path + ".tmp", path)
    except OSError:
        pass


def clear_start_error(folder: str) -> None:
    try:
        posix.unlink(folder + "/" + START_ERROR_NAME)
    except OSError:
        return


def read_start_error(folder: str, now: float) -> tuple[str, float]:
    """The last failed start's message and its age in seconds; ("", inf) when none is recorded."""
    path = folder + "/" + START_ERROR_NAME
    try:
        age = now - posix.stat(path).st_mtime
        fd = posix.open(path, posix.O_RDONLY)
    except OSError:
        return "", float("inf")
    try:
        return posix.read(fd, 4096).decode(errors="replace").strip(), age
    finally:
        posix.close(fd)


def parse_answer(answer: bytes) -> tuple[int, bytes, bytes] | None:
    """The host's answer as exit code, stderr and stdout; None when it is not one."""
    newline = answer.find(b"\n")
    if newline < 0:
        return None
    head = answer[:newline].split(b" ")
    if len(head) != 2 or not head[0].isdigit() or not head[1].isdigit():
        return None
    stderr_end = newline + 1 + int(head[1])
    return int(head[0]), answer[newline + 1 : stderr_end], answer[stderr_end:]


if __name__ == "__main__":
    posix._exit(host_main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""))
