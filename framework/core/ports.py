"""The typed plugin edge: `EnginePort` (what a handler may use), `Handler` and `On`.

Protocols, not the concrete classes, so that the host's `Engine` and the testing kit's
`FakeEngine` are two implementations of one interface that mypy holds both to (the checks at the
bottom of this module and of `framework.testing._fakes`), and a handler typed against the port runs
unchanged on either.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from framework.core.chain import CallNext
from framework.core.contract import Event, FailMode
from framework.core.engine import AgentInfo, Clock
from framework.core.registration import Registration
from framework.stores.base import Store

if TYPE_CHECKING:
    from framework.core.engine import Engine


class UiPort(Protocol):
    """`engine.ui`: what the person sees."""

    def toast(self, text: str, *, timeout_ms: int | None = None) -> None: ...

    def status(self, text: str) -> None: ...

    def log(self, text: str, *, level: str = "debug") -> None: ...


class TranscriptPort(Protocol):
    """`engine.transcript`: lines in the person's transcript, never sent to the model."""

    def line(self, text: str) -> None: ...


class EnvPort(Protocol):
    """`engine.env`: read-only environment variables."""

    def get(self, name: str, default: str | None = None) -> str | None: ...


class SessionPort(Protocol):
    """`engine.session`: the session a handler runs in."""

    @property
    def id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def harness_version(self) -> str | None: ...

    @property
    def model(self) -> str | None: ...

    async def append(self, text: str) -> None: ...


class AgentsPort(Protocol):
    """`engine.agents`: the subagents this session has seen."""

    async def list(self) -> list[AgentInfo]: ...


class CommandsPort(Protocol):
    """`engine.commands`: slash commands a plugin answers through `command.run`."""

    def register(self, name: str, description: str) -> None: ...


class EnginePort(Protocol):
    """The engine port a handler receives, one per (session, plugin); see docs/contract.md.

    Read-only properties, so an implementation may narrow each part (`Engine.ui` is a `Ui`).
    """

    @property
    def plugin(self) -> str: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def ui(self) -> UiPort: ...

    @property
    def transcript(self) -> TranscriptPort: ...

    @property
    def store(self) -> Store: ...

    @property
    def state(self) -> Store: ...

    @property
    def env(self) -> EnvPort: ...

    @property
    def session(self) -> SessionPort: ...

    @property
    def agents(self) -> AgentsPort: ...

    @property
    def commands(self) -> CommandsPort: ...

    @property
    def host_files(self) -> tuple[str, ...]: ...

    @property
    def sandboxed(self) -> bool: ...

    async def dispatch(
        self, event: Event, terminal: Callable[[Any], Awaitable[Any]] | None = None
    ) -> Any: ...

    def data_dir(self, configured: str | os.PathLike[str] | None = None) -> Path: ...

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None: ...


class Handler(Protocol):
    """`async def handler(engine, event, call_next)`: the event may be typed as its own model."""

    def __call__(
        self, engine: EnginePort, event: Any, call_next: CallNext, /
    ) -> Awaitable[Any]: ...


class On(Protocol):
    """The `on` that `register(on, options)` receives, bound to the plugin."""

    def __call__(
        self,
        event: str,
        handler: Handler,
        *,
        match: Mapping[str, Any] | None = None,
        order: int = 0,
        fail: FailMode = "open",
        budget: float | None = None,
    ) -> Registration: ...


if TYPE_CHECKING:
    # mypy holds the host's engine to the port here (the testing kit does the same for its fake).
    def _engine_is_a_port(engine: Engine) -> EnginePort:
        return engine
