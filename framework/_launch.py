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
VERSION = "1"
"""Bump when the wire format or the host's behaviour changes incompatibly."""

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
        info = posix.stat(folder)
        if not private_to_user(info):
            return 1  # the host refuses a shared runtime dir; the client fails open
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
