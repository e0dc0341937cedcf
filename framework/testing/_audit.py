"""Direct file, network and process access seen while a check runs, through one audit hook."""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["ACCESS_KINDS", "Access", "watching"]

_KIND_OF_EVENT: dict[str, str] = {
    "open": "files",
    "os.remove": "files",
    "os.rename": "files",
    "os.mkdir": "files",
    "os.rmdir": "files",
    "os.listdir": "files",
    "os.scandir": "files",
    "os.truncate": "files",
    "shutil.rmtree": "files",
    "sqlite3.connect": "files",
    "socket.connect": "network",
    "socket.bind": "network",
    "socket.getaddrinfo": "network",
    "socket.sendto": "network",
    "urllib.Request": "network",
    "subprocess.Popen": "subprocess",
    "os.system": "subprocess",
    "os.exec": "subprocess",
    "os.posix_spawn": "subprocess",
    "os.spawn": "subprocess",
}
ACCESS_KINDS: frozenset[str] = frozenset(_KIND_OF_EVENT.values())
"""What a plugin may declare it does on its own: files, network, subprocess."""

# Reading code is what importing does; a lazy import inside a handler is not the plugin's own I/O.
_CODE_SUFFIXES = (".py", ".pyc", ".pyi", ".so", ".pyd", ".pth")


@dataclass(frozen=True, slots=True)
class Access:
    """One direct access: its kind, the audit event and what it touched (a path or an address)."""

    kind: str
    event: str
    target: str


_sink: contextvars.ContextVar[list[Access] | None] = contextvars.ContextVar(
    "hookchain_testing_audit", default=None
)
_installed = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    sink = _sink.get()
    if sink is None:
        return
    kind = _KIND_OF_EVENT.get(event)
    if kind is None:
        return
    target = args[0] if args else ""
    if event == "open" and (
        not isinstance(target, (str, bytes)) or str(target).endswith(_CODE_SUFFIXES)
    ):
        return
    sink.append(Access(kind=kind, event=event, target=str(target)[:200]))


def _install() -> None:
    global _installed
    if not _installed:
        # An audit hook cannot be removed; it costs one context-variable read per audited event.
        sys.addaudithook(_hook)
        _installed = True


@contextmanager
def watching() -> Iterator[list[Access]]:
    """Collect every direct access made in this context (and tasks started from it) until exit."""
    _install()
    seen: list[Access] = []
    token = _sink.set(seen)
    try:
        yield seen
    finally:
        _sink.reset(token)
