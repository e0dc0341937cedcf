"""A recording engine port for driving one handler directly: memory or stalled store and clock."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from framework import Clock, Event, FakeClock, Store, open_backend
from framework.core.engine import plugin_data_dir

if TYPE_CHECKING:
    from framework import EnginePort

__all__ = ["FakeEngine", "MemoryStore", "StalledClock", "StalledStore"]


class StalledClock(FakeClock):
    """A clock that never answers: a handler that waits on it must give up on its own."""

    def __init__(self) -> None:
        super().__init__()
        self.stall()


_HOST_SESSION_DROP = re.compile(r"session:[^:]+:")


class StalledBackend:
    """A store backend that never answers (a locked database, a dead redis)."""

    url = "stalled://"

    async def get(self, key: str) -> Any:
        await anyio.sleep_forever()

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        await anyio.sleep_forever()

    async def delete(self, key: str) -> None:
        await anyio.sleep_forever()

    async def keys(self, prefix: str = "") -> list[str]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def update(self, key: str, fn: Callable[[Any], Any], *, ttl: float | None = None) -> Any:
        await anyio.sleep_forever()

    async def clear(self, prefix: str = "") -> int:
        if _HOST_SESSION_DROP.fullmatch(prefix):
            return 0  # the host's own drop of a session at session.end: not the plugin's time
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        return None


class MemoryStore(Store):
    """A `Store` over a fresh in-memory backend: what a `memory://` host gives a plugin."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(open_backend("memory://"))


class StalledStore(Store):
    """A store that never answers (a locked database, a dead redis)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(StalledBackend())


@dataclass(slots=True)
class _Recorder:
    """Keeps every toast, status, log line, transcript line and appended message, in order."""

    entries: list[tuple[str, str]] = field(default_factory=list)

    def of(self, kind: str) -> list[str]:
        return [text for entry_kind, text in self.entries if entry_kind == kind]


class _Ui:
    def __init__(self, recorder: _Recorder) -> None:
        self._recorder = recorder

    def toast(self, text: str, *, timeout_ms: int | None = None) -> None:
        self._recorder.entries.append(("toast", text))

    def status(self, text: str) -> None:
        self._recorder.entries.append(("status", text))

    def log(self, text: str, *, level: str = "debug") -> None:
        self._recorder.entries.append(("log", text))


class _Transcript:
    def __init__(self, recorder: _Recorder) -> None:
        self._recorder = recorder

    def line(self, text: str) -> None:
        self._recorder.entries.append(("transcript", text))


class _Env:
    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = values

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._values.get(name, default)


class _Session:
    def __init__(self, session_id: str, recorder: _Recorder, cwd: str) -> None:
        self.id = session_id
        self.cwd = cwd
        self.harness = "claude-code"
        self.harness_version: str | None = "2.0.0"
        self.model: str | None = "model-under-test"
        self._recorder = recorder

    async def append(self, text: str) -> None:
        self._recorder.entries.append(("append", text))


class _Agents:
    async def list(self) -> list[Any]:
        return []


class _Commands:
    def __init__(self) -> None:
        self.registered: dict[str, str] = {}

    def register(self, name: str, description: str) -> None:
        self.registered[name] = description


class FakeEngine:
    """The engine port with the same attributes as the host's, recording everything it is told.

    `dispatch` answers with `dispatched` (default: the event's neutral result) and `spawn` keeps
    the work until `drain()` runs it, so a check sees spawned work inside its own scope.
    """

    def __init__(
        self,
        plugin: str,
        *,
        session_id: str = "default",
        clock: Clock | None = None,
        store: Store | None = None,
        state: Store | None = None,
        env: Mapping[str, str] | None = None,
        dispatched: Callable[[Any], Awaitable[Any]] | None = None,
        cwd: str = "/project",
        sandbox: Path | None = None,
    ) -> None:
        self.plugin = plugin
        self.sandbox = sandbox
        self.recorder = _Recorder()
        # Time moves only when told, and a handler's sleep passes at once.
        self.clock: Clock = clock if clock is not None else FakeClock(instant_sleep=True)
        self.store: Store = store if store is not None else MemoryStore()
        self.state: Store = state if state is not None else MemoryStore()
        self.ui = _Ui(self.recorder)
        self.transcript = _Transcript(self.recorder)
        self.env = _Env(env if env is not None else {})
        self.session = _Session(session_id, self.recorder, cwd)
        self.agents = _Agents()
        self.commands = _Commands()
        self.dispatched_events: list[Any] = []
        self._dispatched = dispatched
        self._spawned: list[tuple[Callable[..., Awaitable[Any]], tuple[Any, ...]]] = []

    @classmethod
    def stalled(cls, plugin: str, **kwargs: Any) -> FakeEngine:
        """An engine whose clock and stores never answer."""
        return cls(
            plugin, clock=StalledClock(), store=StalledStore(), state=StalledStore(), **kwargs
        )

    @property
    def sandboxed(self) -> bool:
        """Whether this engine stands for a sandboxed host (given a `sandbox` folder)."""
        return self.sandbox is not None

    @property
    def host_files(self) -> tuple[str, ...]:
        """The host's own files: a fake host owns none."""
        return ()

    def data_dir(self, configured: str | os.PathLike[str] | None = None) -> Path:
        """The plugin's own folder, by the host's rule: `<sandbox>/<plugin>` when sandboxed."""
        return plugin_data_dir(
            self.plugin, sandbox=self.sandbox, cwd=self.session.cwd, configured=configured
        )

    async def dispatch(
        self, event: Event, terminal: Callable[[Any], Awaitable[Any]] | None = None
    ) -> Any:
        from framework import neutral_result

        self.dispatched_events.append(event)
        if self._dispatched is not None:
            return await self._dispatched(event)
        return neutral_result(event)

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self._spawned.append((fn, args))

    async def drain(self) -> None:
        """Run the spawned work, in order, the way the host would before closing."""
        while self._spawned:
            fn, args = self._spawned.pop(0)
            await fn(*args)


if TYPE_CHECKING:
    # mypy holds the fake to the same port as the host's `Engine`, so the two cannot drift.
    def _fake_is_a_port(engine: FakeEngine) -> EnginePort:
        return engine
