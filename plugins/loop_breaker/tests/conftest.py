"""Shared fixtures of the loop-breaker tests: the anyio backend and a scripted core session."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from loop_breaker.core import CoreConfig, Decision, LoopBreakerCore, Observation
from loop_breaker.core.normalize import Outcome


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Session:
    """A core fed call by call, keeping every decision it returned."""

    def __init__(self, config: CoreConfig | None = None) -> None:
        self.core = LoopBreakerCore(config)
        self.clock = 1_000
        self.count = 0
        self.decisions: list[Decision] = []

    def call(
        self,
        tool: str,
        tool_input: Mapping[str, Any],
        outcome: Outcome = "ok",
        text: str = "done",
        loop: str = "main",
    ) -> list[Decision]:
        self.count += 1
        self.clock += 1_000
        found = self.core.observe(
            Observation(f"c{self.count}", loop, tool, tool_input, outcome, text, self.clock)
        )
        self.decisions.extend(found)
        return found

    def bash(
        self, command: str, outcome: Outcome = "ok", text: str = "done", loop: str = "main"
    ) -> list[Decision]:
        return self.call("Bash", {"command": command}, outcome, text, loop)

    def edit(self, path: str, old: str, new: str, loop: str = "main") -> list[Decision]:
        return self.call(
            "Edit", {"file_path": path, "old_string": old, "new_string": new}, loop=loop
        )

    def write(self, path: str, content: str) -> list[Decision]:
        return self.call("Write", {"file_path": path, "content": content})

    def kinds(self, kind: str = "nudge") -> list[str]:
        """Detectors of the decisions of `kind` so far, in order."""
        return [decision.detector for decision in self.decisions if decision.kind == kind]


@pytest.fixture
def session() -> Callable[..., Session]:
    return Session
