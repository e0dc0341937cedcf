"""Chain semantics of the host: order, call_next, fail-open, budgets, origin, match, provenance."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import structlog
from hostkit import Terminal, bash, make_plugin

from framework import (
    ENGINE_ORIGIN,
    ContractError,
    Host,
    HostSettings,
    PromptResult,
    PromptSubmit,
    ToolCall,
    ToolResult,
)

pytestmark = pytest.mark.anyio


def host_with(*plugins: Any, budget: float = 2.0, **kwargs: Any) -> Host:
    settings = HostSettings(store="memory://", handler_budget=budget)
    return Host(plugins=list(plugins), entry_points=False, settings=settings, config={}, **kwargs)


def recorder(name: str, trail: list[str], **on_kwargs: Any) -> Any:
    def register(on: Any) -> None:
        async def handler(engine: Any, event: Any, call_next: Any) -> Any:
            trail.append(f"{name}>")
            result = await call_next(event)
            trail.append(f"<{name}")
            return result

        on("tool.call", handler, **on_kwargs)

    return make_plugin(name, register)


async def test_order_is_by_order_then_plugin_name_then_registration_never_install_order() -> None:
    trail: list[str] = []

    def two(on: Any) -> None:
        for label in ("first", "second"):

            async def handler(engine: Any, event: Any, call_next: Any, label: str = label) -> Any:
                trail.append(label)
                return await call_next(event)

            on("tool.call", handler)

    plugins = [
        recorder("zeta", trail),
        make_plugin("beta", two),
        recorder("alpha", trail),
        recorder("outer", trail, order=-5),
    ]
    for installed in (plugins, list(reversed(plugins))):
        trail.clear()
        async with host_with(*installed) as host:
            await host.dispatch(bash(), Terminal())
        assert trail == [
            "outer>",
            "alpha>",
            "first",
            "second",
            "zeta>",
            "<zeta",
            "<alpha",
            "<outer",
        ]


async def test_second_call_next_is_a_contract_error_and_downstream_runs_once() -> None:
    errors: list[BaseException] = []

    def register(on: Any) -> None:
        async def twice(engine: Any, event: Any, call_next: Any) -> Any:
            first = await call_next(event)
            try:
                await call_next(event)
            except ContractError as error:
                errors.append(error)
                raise
            return first

        on("tool.call", twice)

    terminal = Terminal()
    async with host_with(make_plugin("greedy", register)) as host:
        outcome = await host.dispatch(bash(), terminal)
        assert host.failures[("greedy", "tool.call")] == 1
    assert terminal.runs == 1
    assert outcome.result is terminal.result
    assert "greedy" in str(errors[0]) and "tool.call" in str(errors[0])


async def test_raise_before_call_next_runs_downstream_once_and_logs_once_per_site() -> None:
    def register(on: Any) -> None:
        async def broken(engine: Any, event: Any, call_next: Any) -> Any:
            raise RuntimeError(f"secret {event.input['command']}")

        on("tool.call", broken)

    terminal = Terminal()
    with structlog.testing.capture_logs() as logs:
        async with host_with(make_plugin("broken", register)) as host:
            first = await host.dispatch(bash("cat secret.txt"), terminal)
            await host.dispatch(bash("cat secret.txt", tool_use_id="t2"), terminal)
            assert host.failures[("broken", "tool.call")] == 2
    assert first.result is terminal.result
    assert terminal.runs == 2
    failures = [entry for entry in logs if entry["event"].startswith("handler failed")]
    assert len(failures) == 1
    assert failures[0]["plugin"] == "broken" and failures[0]["error_type"] == "RuntimeError"
    assert "secret" not in repr(failures[0])


@pytest.mark.parametrize("bad", ["raise", "wrong type"])
async def test_failure_after_call_next_returns_downstreams_object(bad: str) -> None:
    def register(on: Any) -> None:
        async def late(engine: Any, event: Any, call_next: Any) -> Any:
            await call_next(event)
            if bad == "raise":
                raise ValueError("late")
            return "not a ToolResult"

        on("tool.call", late)

    terminal = Terminal()
    async with host_with(make_plugin("late", register)) as host:
        outcome = await host.dispatch(bash(), terminal)
    assert outcome.result is terminal.result
    assert terminal.runs == 1


async def test_budget_limits_own_time_not_downstreams() -> None:
    def register(on: Any) -> None:
        async def passthrough(engine: Any, event: Any, call_next: Any) -> Any:
            return await call_next(event)

        on("tool.call", passthrough, budget=0.05)

    class SlowTerminal(Terminal):
        async def __call__(self, event: Any) -> Any:
            await anyio.sleep(0.15)
            return await super().__call__(event)

    terminal = SlowTerminal()
    async with host_with(make_plugin("quick", register)) as host:
        outcome = await host.dispatch(bash(), terminal)
        assert not host.failures
    assert outcome.result is terminal.result


@pytest.mark.parametrize("stuck", ["before", "after"])
async def test_handler_stuck_past_its_budget_is_skipped(stuck: str) -> None:
    cancelled: list[bool] = []

    def register(on: Any) -> None:
        async def slow(engine: Any, event: Any, call_next: Any) -> Any:
            try:
                slow_now = event.tool_use_id == "t1"
                if stuck == "before" and slow_now:
                    await anyio.sleep(0.15)
                result = await call_next(event)
                if stuck == "after" and slow_now:
                    await anyio.sleep(0.15)
                return result.with_note("too late", by="slow")
            except anyio.get_cancelled_exc_class():
                cancelled.append(True)
                raise

        on("tool.call", slow, budget=0.05)

    terminal = Terminal()
    async with host_with(make_plugin("slow", register)) as host:
        with anyio.fail_after(1):
            outcome = await host.dispatch(bash(), terminal)
        assert host.failures[("slow", "tool.call")] == 1
        # The host is still healthy afterwards: the next dispatch is not cancelled.
        again = await host.dispatch(bash(tool_use_id="t2"), Terminal())
    assert outcome.result is terminal.result
    assert terminal.runs == 1
    assert cancelled == [True]
    assert [note.text for note in again.result.notes] == ["too late"]


async def test_downstream_exception_reaches_handlers_and_caller_as_the_same_object() -> None:
    seen: list[BaseException] = []

    def register(on: Any) -> None:
        async def watcher(engine: Any, event: Any, call_next: Any) -> Any:
            try:
                return await call_next(event)
            except LookupError as error:
                seen.append(error)
                raise

        on("tool.call", watcher)

    boom = LookupError("tool exploded")
    async with host_with(make_plugin("w1", register), make_plugin("w2", register)) as host:
        with pytest.raises(LookupError) as caught:
            await host.dispatch(bash(), Terminal(error=boom))
        assert not host.failures
    assert caught.value is boom
    assert seen == [boom, boom]


async def test_handler_raising_its_own_error_after_downstream_failed_passes_downstreams() -> None:
    def register(on: Any) -> None:
        async def clumsy(engine: Any, event: Any, call_next: Any) -> Any:
            try:
                return await call_next(event)
            except LookupError:
                raise ValueError("handler bug") from None

        on("tool.call", clumsy)

    boom = LookupError("tool exploded")
    async with host_with(make_plugin("clumsy", register)) as host:
        with pytest.raises(LookupError) as caught:
            await host.dispatch(bash(), Terminal(error=boom))
    assert caught.value is boom


async def test_cancellation_by_the_caller_propagates_through_handlers_and_terminal() -> None:
    cancelled: list[str] = []

    def register(on: Any) -> None:
        async def handler(engine: Any, event: Any, call_next: Any) -> Any:
            try:
                return await call_next(event)
            except anyio.get_cancelled_exc_class():
                cancelled.append("handler")
                raise

        on("tool.call", handler)

    class Hanging(Terminal):
        async def __call__(self, event: Any) -> Any:
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                cancelled.append("terminal")
                raise

    async with host_with(make_plugin("h", register)) as host:
        with anyio.move_on_after(0.05) as scope:
            await host.dispatch(bash(), Hanging())
        assert scope.cancelled_caught
        assert not host.failures
    assert cancelled == ["terminal", "handler"]


async def test_fail_closed_turns_an_error_into_a_denial_by_the_plugin() -> None:
    def register(on: Any) -> None:
        async def guard(engine: Any, event: Any, call_next: Any) -> Any:
            raise OSError("policy file unreadable")

        on("tool.call", guard, fail="closed")

    terminal = Terminal()
    async with host_with(make_plugin("guard", register)) as host:
        outcome = await host.dispatch(bash(), terminal)
    assert terminal.runs == 0
    assert outcome.result.denial is not None
    assert outcome.result.denial.by == "guard"
    assert "OSError" in outcome.result.denial.reason
    assert [(a.by, a.kind) for a in outcome.actions] == [("guard", "deny")]


async def test_fail_closed_on_a_prompt_drops_it() -> None:
    def register(on: Any) -> None:
        async def guard(engine: Any, event: Any, call_next: Any) -> Any:
            raise OSError("nope")

        on("prompt.submit", guard, fail="closed")

    async with host_with(make_plugin("gate", register)) as host:
        outcome = await host.dispatch(PromptSubmit(text="hello"))
    assert isinstance(outcome.result, PromptResult)
    assert outcome.result.drop is not None and outcome.result.drop.by == "gate"


def test_fail_closed_on_an_event_without_refusal_is_refused_at_registration() -> None:
    def register(on: Any) -> None:
        async def handler(engine: Any, event: Any, call_next: Any) -> Any:
            return await call_next(event)

        on("turn.start", handler, fail="closed")

    host = host_with(make_plugin("odd", register))
    [record] = host.load()
    assert record.status == "failed"
    assert "fail='closed'" in (record.error or "")


async def test_catch_replaces_recovery_and_a_raising_fallback_falls_back_to_default() -> None:
    def register(on: Any) -> None:
        async def broken(engine: Any, event: Any, call_next: Any) -> Any:
            raise RuntimeError("x")

        async def fallback(engine: Any, event: Any, error: BaseException, call_next: Any) -> Any:
            result = await call_next(event)
            return result.with_note(f"recovered from {type(error).__name__}", by="caught")

        on("tool.call", broken).catch(fallback)

    def register_bad(on: Any) -> None:
        async def broken(engine: Any, event: Any, call_next: Any) -> Any:
            raise RuntimeError("x")

        async def fallback(engine: Any, event: Any, error: BaseException, call_next: Any) -> Any:
            raise ValueError("fallback broke too")

        on("tool.call", broken).catch(fallback)

    terminal = Terminal()
    async with host_with(make_plugin("caught", register)) as host:
        outcome = await host.dispatch(bash(), terminal)
    assert [note.text for note in outcome.result.notes] == ["recovered from RuntimeError"]
    assert terminal.runs == 1

    terminal = Terminal()
    async with host_with(make_plugin("caught", register_bad)) as host:
        outcome = await host.dispatch(bash(), terminal)
        assert host.failures[("caught", "tool.call")] == 2
    assert outcome.result is terminal.result
    assert terminal.runs == 1


async def test_origin_is_engine_for_the_harness_and_the_plugin_for_its_own_dispatch() -> None:
    origins: list[tuple[str, str]] = []

    def counter(on: Any) -> None:
        async def count(engine: Any, event: Any, call_next: Any) -> Any:
            origins.append((event.tool_use_id, call_next.origin))
            return await call_next(event)

        on("tool.call", count)

    def prober(on: Any) -> None:
        async def probe(engine: Any, event: Any, call_next: Any) -> Any:
            if event.tool_use_id == "t1":
                await engine.dispatch(bash("git status", tool_use_id="probe"))
            return await call_next(event)

        on("tool.call", probe, order=-1)

    async with host_with(make_plugin("counter", counter), make_plugin("prober", prober)) as host:
        await host.dispatch(bash(), Terminal())
    assert origins == [("probe", "prober"), ("t1", ENGINE_ORIGIN)]


async def test_nested_dispatch_depth_is_limited_with_a_clear_error() -> None:
    refused: list[ContractError] = []
    entered: list[str] = []

    def register(on: Any) -> None:
        async def recurse(engine: Any, event: Any, call_next: Any) -> Any:
            entered.append(call_next.origin)
            try:
                await engine.dispatch(event)
            except ContractError as error:
                refused.append(error)
                raise
            return await call_next(event)

        on("tool.call", recurse)

    settings = HostSettings(store="memory://", max_dispatch_depth=3)
    plugin = make_plugin("loop", register)
    async with Host(plugins=[plugin], entry_points=False, settings=settings, config={}) as host:
        terminal = Terminal()
        outcome = await host.dispatch(bash(), terminal)
        assert host.failures[("loop", "tool.call")] >= 1
    # Three levels run, the fourth is refused by name; fail-open keeps every level working.
    assert entered == ["engine", "loop", "loop"]
    [error] = refused
    assert "levels deep" in str(error) and "HOOKCHAIN_MAX_DISPATCH_DEPTH" in str(error)
    assert outcome.result is terminal.result


async def test_match_skips_the_handler_without_entering_it() -> None:
    entered: list[str] = []

    def register(on: Any) -> None:
        async def only_edits(engine: Any, event: Any, call_next: Any) -> Any:
            entered.append(event.tool)
            return await call_next(event)

        on("tool.call", only_edits, match={"tool": {"Edit", "Write"}})

    async with host_with(make_plugin("m", register)) as host:
        await host.dispatch(bash(), Terminal())
        await host.dispatch(
            ToolCall(session_id="s1", tool_use_id="t2", tool="Edit", input={}), Terminal()
        )
    assert entered == ["Edit"]


def test_match_on_an_unknown_field_is_refused_at_registration() -> None:
    def register(on: Any) -> None:
        async def handler(engine: Any, event: Any, call_next: Any) -> Any:
            return await call_next(event)

        on("tool.call", handler, match={"tool_name": "Bash"})

    [record] = host_with(make_plugin("typo", register)).load()
    assert record.status == "failed"
    assert "tool_name" in (record.error or "") and "typo" in (record.error or "")


async def test_provenance_names_who_added_what() -> None:
    def noter(on: Any) -> None:
        async def note(engine: Any, event: Any, call_next: Any) -> Any:
            result = await call_next(event)
            engine.ui.toast("heads up")
            return result.with_note("careful", by="noter")

        on("tool.call", note)

    def denier(on: Any) -> None:
        async def deny(engine: Any, event: Any, call_next: Any) -> Any:
            if event.input["command"].startswith("rm"):
                return ToolResult.denied("no rm", by="denier")
            return await call_next(event)

        on("tool.call", deny, order=1)

    async with host_with(make_plugin("noter", noter), make_plugin("denier", denier)) as host:
        allowed = await host.dispatch(bash("ls"), Terminal())
        denied = await host.dispatch(bash("rm -rf x", tool_use_id="t2"), Terminal())
    assert [(a.by, a.kind, a.text) for a in allowed.actions] == [
        ("noter", "toast", "heads up"),
        ("noter", "note", "careful"),
    ]
    assert ("denier", "deny", "no rm") in [(a.by, a.kind, a.text) for a in denied.actions]
    assert denied.result.denial.by == "denier"


async def test_a_changed_event_reaches_downstream() -> None:
    def register(on: Any) -> None:
        async def rewrite(engine: Any, event: Any, call_next: Any) -> Any:
            safer = event.model_copy(update={"input": {"command": "ls -la"}})
            return await call_next(safer)

        on("tool.call", rewrite)

    terminal = Terminal()
    async with host_with(make_plugin("rewriter", register)) as host:
        await host.dispatch(bash("ls"), terminal)
    assert terminal.seen[0].input == {"command": "ls -la"}


async def test_match_on_none_means_the_field_is_none() -> None:
    entered: list[str | None] = []

    def register(on: Any) -> None:
        async def main_loop_only(engine: Any, event: Any, call_next: Any) -> Any:
            entered.append(event.agent_id)
            return await call_next(event)

        on("tool.call", main_loop_only, match={"agent_id": None})

    async with host_with(make_plugin("m", register)) as host:
        await host.dispatch(bash(), Terminal())
        await host.dispatch(bash().model_copy(update={"agent_id": "agent-1"}), Terminal())
    assert entered == [None]


def test_budgets_hold_when_a_host_is_opened_again_under_a_new_event_loop() -> None:
    def register(on: Any) -> None:
        async def stuck(engine: Any, event: Any, call_next: Any) -> Any:
            await anyio.sleep(5)
            return await call_next(event)

        on("tool.call", stuck, budget=0.05)

    host = host_with(make_plugin("stuck", register))

    async def once() -> Any:
        async with host:
            with anyio.fail_after(2):
                return (await host.dispatch(bash(), Terminal())).result

    for _ in range(2):
        assert anyio.run(once).output == "done"


async def test_a_finished_dispatch_leaves_no_garbage_for_the_collector() -> None:
    # A dispatch (and its frames) must go by reference counting the moment its caller lets go:
    # a reference cycle would leave every dispatch to the collector, whose passes then cost
    # every dispatch of a busy host (benchmarks/dispatch.py).
    import gc

    trail: list[str] = []
    async with host_with(recorder("a", trail), recorder("b", trail)) as host:
        for _ in range(3):  # warm: sessions, bound chains, the watchdog
            await host.dispatch(bash("ls"), Terminal())
        gc.collect()
        gc.disable()
        try:
            for _ in range(50):
                outcome = await host.dispatch(bash("ls"), Terminal())
                assert outcome.origin == ENGINE_ORIGIN
                del outcome
            unreachable = gc.collect()
        finally:
            gc.enable()
    assert unreachable == 0
    assert trail.count("a>") == 53


async def test_a_finished_dispatch_in_the_same_task_is_no_parent_of_the_next() -> None:
    # A dispatch started outside any other stays in the context when it ends (its reset is
    # saved): it must count as none, for nesting depth and for where actions are recorded.
    seen: list[tuple[int, list[str]]] = []
    hosts: list[Host] = []

    def register(on: Any) -> None:
        async def nest(engine: Any, event: Any, call_next: Any) -> Any:
            if call_next.origin == ENGINE_ORIGIN:
                inner = await hosts[0].dispatch(event, origin="nest")
                engine.ui.toast("outer")
                seen.append((inner.depth, [a.text for a in inner.actions]))
            else:
                engine.ui.toast("inner")
            return await call_next(event)

        on("tool.call", nest)

    settings = HostSettings(store="memory://", max_dispatch_depth=2)
    plugin = make_plugin("nest", register)
    async with Host(plugins=[plugin], entry_points=False, settings=settings, config={}) as host:
        hosts.append(host)
        for _ in range(3):
            outcome = await host.dispatch(bash(), Terminal())
            assert outcome.depth == 0
            assert [a.text for a in outcome.actions] == ["outer"]
        assert host.failures == {}
        host.engine("nest").ui.toast("outside")
        assert [a.text for a in host.take_pending("default")] == ["outside"]
    assert seen == [(1, ["inner"])] * 3
