"""structlog set-up: console rendering on a TTY, JSON lines otherwise, level from settings."""

from __future__ import annotations

import logging
import sys

import structlog

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


class _StderrLogger:
    """Writes to whatever `sys.stderr` is at the time, so a replaced stream is never stale."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log = debug = info = warn = warning = error = critical = exception = fatal = msg


def _stderr_logger(*args: object) -> _StderrLogger:
    return _StderrLogger()


def configure_logging(level: str = "warning", *, json: bool | None = None) -> None:
    """Configure structlog once for a process; logs go to stderr so stdout stays for answers."""
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.WARNING)),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
