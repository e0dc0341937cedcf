"""What the chain, the engine port and the adapters share about a running dispatch.

Its own module below the chain and the engine port, so neither has to import the other for it.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Action:
    """One entry of a dispatch's audit: who (`by`) did what (`kind`) during which event.

    Kinds: note, deny, drop, context, continue, reply, input, output, toast, transcript, status,
    log, append. `timeout_ms` is how long a toast asks to be shown (None: the harness's default).
    """

    by: str
    kind: str
    text: str
    event: str
    timeout_ms: int | None = None


current_dispatch: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "hookchain_dispatch", default=None
)
"""The dispatch last started in this context. Read it with `running_dispatch()`: a dispatch
started outside any other (depth 0) is left here when it ends, which saves the reset on the
host's hottest path, and a finished dispatch counts as none."""


def running_dispatch() -> Any:
    """The dispatch running in this context (None outside one): where UI actions are recorded."""
    dispatch = current_dispatch.get()
    if dispatch is None or not dispatch.running:
        return None
    return dispatch
