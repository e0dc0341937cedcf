"""The per-handler conformance checks (1–6, 10): each handler driven directly on every vector."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from framework import (
    CommandReply,
    ContextResult,
    Event,
    PromptResult,
    ToolResult,
    TurnResult,
    TurnStep,
    is_valid_result,
)
from framework.testing._audit import Access
from framework.testing._fakes import FakeEngine
from framework.testing._loader import HandlerUnderTest
from framework.testing._scripts import (
    ProbeCallNext,
    RecordingStream,
    ScriptedTerminal,
    raises,
    slow,
)
from framework.testing._vectors import Vector

__all__ = ["CHECKS", "CheckResult", "DownstreamError", "HandlerChecks"]

CHECKS: dict[str, str] = {
    "call-next-once": "call_next awaited at most once",
    "valid-result": "the result is a valid result for the event",
    "passthrough": "deciding nothing returns downstream's object",
    "downstream-error": "a downstream exception reaches the caller as the same object",
    "cancellation": "caller cancellation propagates to downstream and out",
    "streams": "stream chunks pass unchanged, in order, at once; aclose/athrow reach below",
    "budget": "own time stays inside the budget with a stalled clock and store",
    "deterministic": "two loads register the same handlers in the same order",
    "options": "options validate their defaults and reject a bad env value clearly",
    "no-direct-io": "no undeclared file, network or process access during dispatch",
}
"""Check id → what it asserts, in the order of the contract's list."""

Status = Literal["pass", "fail", "n/a"]

# Time a correct handler needs at most for one step of a check when nothing it waits on is slow.
_STEP_TIMEOUT = 1.0


class DownstreamError(Exception):
    """Raised by the scripted downstream; a handler must let this very object through."""


class ThrownIntoStream(Exception):
    """Thrown into a wrapped stream with `athrow`; it must reach the stream below."""


@dataclass(slots=True)
class CheckResult:
    """One check's verdict for a plugin: `pass`, `fail` with the first reason, or `n/a`."""

    status: Status = "n/a"
    reason: str = ""

    def passed(self) -> None:
        if self.status == "n/a":
            self.status = "pass"

    def failed(self, reason: str) -> None:
        if self.status != "fail":
            self.status, self.reason = "fail", reason

    def render(self) -> str:
        return f"fail: {self.reason}" if self.status == "fail" else self.status


@dataclass(slots=True)
class _Run:
    result: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    probe: ProbeCallNext | None = None
    terminal: ScriptedTerminal | None = None


def _changed_only_the_input(result: Any, before: Any) -> bool:
    """Whether `result` is downstream's tool result with only a new `updated_input` (the audited
    way to change what the harness runs)."""
    if not isinstance(result, ToolResult) or not isinstance(before, ToolResult):
        return False
    if result.updated_input is None or result.updated_input == before.updated_input:
        return False
    return result.model_copy(update={"updated_input": before.updated_input}) == before


def _provenance_by(result: Any, before: Any) -> set[str]:
    """The `by` of every provenance value `result` adds relative to `before`."""
    added: set[str] = set()
    if isinstance(result, ToolResult):
        old_notes = before.notes if isinstance(before, ToolResult) else ()
        added |= {note.by for note in result.notes if note not in old_notes}
        if result.denial is not None and getattr(before, "denial", None) != result.denial:
            added.add(result.denial.by)
    elif isinstance(result, PromptResult):
        if result.drop is not None and getattr(before, "drop", None) != result.drop:
            added.add(result.drop.by)
    elif isinstance(result, ContextResult):
        old_blocks = before.blocks if isinstance(before, ContextResult) else ()
        added |= {block.by for block in result.blocks if block not in old_blocks}
    elif isinstance(result, TurnResult):
        old = getattr(before, "continuation", None)
        if result.continuation is not None and result.continuation != old:
            added.add(result.continuation.by)
    elif isinstance(result, CommandReply) and result.by is not None and result != before:
        added.add(result.by)
    return added


def _adapt(handler: HandlerUnderTest, vector: Vector) -> Vector | None:
    """The vector as this handler would see it: as is, or with its match fields set to fit."""
    if vector.event_name != handler.event:
        return None
    if handler.accepts(vector.event):
        return vector
    if not handler.match_spec:
        return None
    update: dict[str, Any] = {}
    for field_name, wanted in handler.match_spec.items():
        if callable(wanted):
            continue
        if isinstance(wanted, (set, frozenset, list, tuple)):
            if not wanted:
                return None
            update[field_name] = sorted(wanted, key=repr)[0]
        else:
            update[field_name] = wanted
    adapted = vector.event.model_copy(update=update)
    return vector.with_event(adapted) if handler.accepts(adapted) else None


@dataclass(slots=True)
class HandlerChecks:
    """Runs checks 1–6 and 10 for the handlers of one plugin and keeps one verdict per check."""

    plugin: str
    declared_access: frozenset[str] = frozenset()
    cwd: str = "/project"
    results: dict[str, CheckResult] = field(
        default_factory=lambda: {check: CheckResult() for check in CHECKS}
    )
    access: list[Access] = field(default_factory=list)

    def vectors_for(self, handler: HandlerUnderTest, vectors: tuple[Vector, ...]) -> list[Vector]:
        adapted = (_adapt(handler, vector) for vector in vectors)
        return [vector for vector in adapted if vector is not None]

    async def run(self, handler: HandlerUnderTest, vector: Vector) -> None:
        where = f"{handler.name} on {vector.id}"
        await self._normal(handler, vector, where)
        await self._downstream_error(handler, vector, where)
        await self._cancellation(handler, vector, where)
        if isinstance(vector.event, TurnStep):
            await self._streams(handler, vector, where)

    def finish_access(self) -> None:
        undeclared = [a for a in self.access if a.kind not in self.declared_access]
        check = self.results["no-direct-io"]
        if undeclared:
            first = undeclared[0]
            check.failed(f"{first.kind} access ({first.event} {first.target}) not declared")
        elif self.results["valid-result"].status != "n/a":
            check.passed()

    def _engine(self, vector: Vector) -> FakeEngine:
        # Sandboxed like a replay: whatever the plugin writes through data_dir stays in `cwd`.
        return FakeEngine(
            self.plugin, session_id=vector.event.session_id, cwd=self.cwd, sandbox=Path(self.cwd)
        )

    # -- the runs --------------------------------------------------------------------------------

    async def _call(
        self,
        handler: HandlerUnderTest,
        event: Event,
        terminal: ScriptedTerminal,
        engine: FakeEngine,
        limit: float,
    ) -> _Run:
        probe = ProbeCallNext(terminal, event, plugin=self.plugin)
        run = _Run(probe=probe, terminal=terminal)
        with anyio.move_on_after(limit) as scope:
            try:
                run.result = await handler.handler(engine, event, probe)
            except Exception as error:
                run.error = error
        run.timed_out = scope.cancelled_caught
        self._count_calls(probe, f"{handler.name} on {event.name}")
        return run

    def _count_calls(self, probe: ProbeCallNext, where: str) -> None:
        if probe.calls > 1:
            self.results["call-next-once"].failed(f"{where}: awaited call_next {probe.calls} times")
        else:
            self.results["call-next-once"].passed()

    async def _normal(self, handler: HandlerUnderTest, vector: Vector, where: str) -> None:
        engine = self._engine(vector)
        terminal = ScriptedTerminal(vector.script())
        run = await self._call(handler, vector.event, terminal, engine, _STEP_TIMEOUT * 5)
        with anyio.move_on_after(_STEP_TIMEOUT * 5):
            await engine.drain()
        if run.timed_out:
            self.results["budget"].failed(f"{where}: never returned even with a working engine")
            return
        valid = self.results["valid-result"]
        if run.error is not None:
            valid.failed(f"{where}: raised {type(run.error).__name__} with a working downstream")
            return
        if not is_valid_result(vector.event, run.result):
            valid.failed(f"{where}: returned {type(run.result).__name__}")
            return
        valid.passed()
        if isinstance(vector.event, TurnStep) or vector.event.result_type is None:
            return
        assert run.probe is not None
        downstream = run.probe.result if run.probe.called else None
        passthrough = self.results["passthrough"]
        if run.result is downstream:
            passthrough.passed()
            return
        by = _provenance_by(run.result, downstream)
        if self.plugin in by:
            passthrough.passed()
        elif by:
            names = ", ".join(sorted(by))
            passthrough.failed(f"{where}: added provenance by {names}, not by {self.plugin!r}")
        elif run.result == downstream:
            passthrough.failed(f"{where}: returned an equal copy, not downstream's object")
        elif _changed_only_the_input(run.result, downstream):
            passthrough.passed()  # a rewritten tool input is a decision the chain audits by plugin
        else:
            passthrough.failed(f"{where}: changed the result without a note, denial, drop or block")

    async def _downstream_error(
        self, handler: HandlerUnderTest, vector: Vector, where: str
    ) -> None:
        if isinstance(vector.event, TurnStep):
            return  # a step's failures arrive through its stream: covered by the stream checks
        engine = self._engine(vector)
        error = DownstreamError(f"downstream failed on {vector.id}")
        terminal = ScriptedTerminal(raises(error))
        run = await self._call(handler, vector.event, terminal, engine, _STEP_TIMEOUT * 5)
        if run.timed_out or not terminal.events:
            return  # a hang is the budget check's; a handler that decided alone never saw the error
        check = self.results["downstream-error"]
        if run.error is error:
            check.passed()
        elif run.error is None:
            check.failed(f"{where}: swallowed the downstream exception and returned a result")
        else:
            raised = type(run.error).__name__
            check.failed(f"{where}: raised {raised} instead of downstream's error")

    async def _cancellation(self, handler: HandlerUnderTest, vector: Vector, where: str) -> None:
        engine = self._engine(vector)
        # One event wakes the caller when downstream is entered or the handler is done.
        progress = anyio.Event()
        terminal = ScriptedTerminal(slow(vector.result(), math.inf), entered=progress)
        probe = ProbeCallNext(terminal, vector.event, plugin=self.plugin)
        finished = anyio.Event()
        returned: list[Any] = []
        check = self.results["cancellation"]

        async def caller(scope: anyio.CancelScope) -> None:
            with scope:
                try:
                    returned.append(await handler.handler(engine, vector.event, probe))
                except Exception:
                    pass  # the handler's own failure is judged by the other checks
                finally:
                    finished.set()
                    progress.set()

        scope = anyio.CancelScope()
        async with anyio.create_task_group() as group:
            group.start_soon(caller, scope)
            with anyio.move_on_after(_STEP_TIMEOUT * 5):
                await progress.wait()
            if not terminal.events:
                group.cancel_scope.cancel()
                return  # never reached downstream: nothing to cancel through it
            scope.cancel()
            with anyio.move_on_after(_STEP_TIMEOUT) as waiting:
                await finished.wait()
            if waiting.cancelled_caught:
                group.cancel_scope.cancel()
                check.failed(f"{where}: still running {_STEP_TIMEOUT:g}s after being cancelled")
                return
        self._count_calls(probe, where)
        if returned:
            check.failed(f"{where}: swallowed the caller's cancellation and returned")
        elif not terminal.cancelled:
            check.failed(f"{where}: the cancellation did not reach downstream")
        else:
            check.passed()

    async def _streams(self, handler: HandlerUnderTest, vector: Vector, where: str) -> None:
        check = self.results["streams"]
        expected = vector.chunks()
        for mode in ("iterate", "aclose", "athrow"):
            engine = FakeEngine.stalled(
                self.plugin,
                session_id=vector.event.session_id,
                cwd=self.cwd,
                sandbox=Path(self.cwd),
            )
            terminal = ScriptedTerminal(vector.script())
            run = await self._call(handler, vector.event, terminal, engine, _STEP_TIMEOUT)
            if run.timed_out or run.error is not None or not terminal.streams:
                check.failed(f"{where}: no stream back within {_STEP_TIMEOUT:g}s (stalled engine)")
                return
            below = terminal.streams[0]
            problem = await _exercise(run.result, below, expected, mode)
            if problem:
                check.failed(f"{where}: {problem}")
                return
        check.passed()


async def _exercise(
    stream: Any, below: RecordingStream, expected: tuple[Any, ...], mode: str
) -> str | None:
    """Drive a handler's stream one way; return what went wrong, or None."""
    if not hasattr(stream, "__anext__"):
        return f"returned {type(stream).__name__}, not a stream"
    if mode == "iterate":
        seen: list[Any] = []
        while True:
            with anyio.move_on_after(_STEP_TIMEOUT) as waiting:
                try:
                    seen.append(await stream.__anext__())
                except StopAsyncIteration:
                    break
            if waiting.cancelled_caught:
                return f"held chunk {len(seen)} back for over {_STEP_TIMEOUT:g}s (stalled engine)"
        passed_on = zip(seen, below.yielded, strict=False)
        if len(seen) != len(expected) or any(out is not sent for out, sent in passed_on):
            return "chunks changed, dropped, added or reordered"
        return None
    first: Callable[[], Any] = stream.__anext__
    with anyio.move_on_after(_STEP_TIMEOUT) as waiting:
        await first()
    if waiting.cancelled_caught:
        return "held the first chunk back (stalled engine)"
    if mode == "aclose":
        if not hasattr(stream, "aclose"):
            return "the stream has no aclose"
        with anyio.move_on_after(_STEP_TIMEOUT):
            await stream.aclose()
        return None if below.closed else "aclose did not reach the stream below"
    if not hasattr(stream, "athrow"):
        return "the stream has no athrow"
    thrown = ThrownIntoStream("thrown by the caller")
    with anyio.move_on_after(_STEP_TIMEOUT):
        try:
            await stream.athrow(thrown)
        except ThrownIntoStream:
            pass
        except Exception as error:
            return f"athrow raised {type(error).__name__} instead of the thrown error"
    if not any(error is thrown for error in below.thrown):
        return "athrow did not reach the stream below"
    return None
