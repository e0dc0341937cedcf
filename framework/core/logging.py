"""structlog set-up: console rendering on a TTY, JSON lines otherwise, level from settings."""

from __future__ import annotations

import logging
import sys
from collections.abc import Hashable, MutableMapping
from typing import Any

import structlog

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


class Once:
    """The rule for a failure that may repeat at every event: log it the first time only.

    One per host part (the chain's failure log, a session cache, a plugin's runtime): `first(key)`
    is True once per key, where the key names the site (plugin, event, place), never the content.
    """

    __slots__ = ("_said",)

    def __init__(self) -> None:
        self._said: set[Hashable] = set()

    def first(self, key: Hashable) -> bool:
        if key in self._said:
            return False
        self._said.add(key)
        return True


class _StderrLogger:
    """Writes to whatever `sys.stderr` is at the time, so a replaced stream is never stale."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log = debug = info = warn = warning = error = critical = exception = fatal = msg


def _stderr_logger(*args: object) -> _StderrLogger:
    return _StderrLogger()


def readable_line(_logger: object, _name: str, event: MutableMapping[str, Any]) -> str:
    """One line a person reads: `hookchain: warning: my-plugin: text (key=value)`.

    What a terminal shows; the time and level fields stay for the JSON lines of a pipe."""
    event = dict(event)
    level = event.pop("level", "info")
    text = str(event.pop("event", ""))
    event.pop("timestamp", None)
    plugin = event.pop("plugin", None)
    who = f"{plugin}: " if plugin else ""
    extra = " ".join(f"{key}={value}" for key, value in event.items())
    return f"hookchain: {level}: {who}{text}" + (f" ({extra})" if extra else "")


def configure_logging(level: str = "warning", *, json: bool | None = None) -> None:
    """Configure structlog once for a process; logs go to stderr so stdout stays for answers.

    On a terminal each record is one readable line; elsewhere a JSON line with its time."""
    if json is None:
        json = not sys.stderr.isatty()
    processors: list[structlog.typing.Processor] = [structlog.processors.add_log_level]
    if json:
        processors += [
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ]
    else:
        processors.append(readable_line)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.WARNING)),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
