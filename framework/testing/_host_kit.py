"""A host for plugin tests: memory store, fake clock, no entry points, no person's settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from framework import Action, Event, Host, Outcome
from framework.testing._isolated import make_host
from framework.testing._scripts import Script, ScriptedTerminal
from framework.testing._suite import PluginReport, run_suite

__all__ = [
    "assert_conformant",
    "conformance_tests",
    "dispatch",
    "make_host",
    "provenance",
    "suite_report",
]


async def dispatch(host: Host, event: Event, script: Script | None = None) -> Outcome:
    """Dispatch `event` with downstream playing `script` (default: the harness's neutral answer)."""
    if script is None:
        return await host.dispatch(event)
    return await host.dispatch(event, terminal=ScriptedTerminal(script))


def provenance(outcome: Outcome, *, by: str | None = None, kind: str | None = None) -> list[Action]:
    """The audit of a dispatch, optionally only one plugin's (`by`) or one kind of action."""
    return [
        action
        for action in outcome.actions
        if (by is None or action.by == by) and (kind is None or action.kind == kind)
    ]


def suite_report(plugin: Any, *, contract: str | None = None) -> PluginReport:
    """Run the conformance suite for a plugin module in a fresh event loop."""

    async def run() -> PluginReport:
        return await run_suite(plugin, contract=contract)

    return anyio.run(run)


def assert_conformant(plugin: Any, *, contract: str | None = None) -> PluginReport:
    """Fail with every failed check and its reason unless the plugin passes the suite."""
    report = suite_report(plugin, contract=contract)
    failures = report.failures()
    if failures:
        lines = "\n".join(f"  {check}: {reason}" for check, reason in failures.items())
        raise AssertionError(f"plugin {report.name!r} fails the conformance suite:\n{lines}")
    return report


def conformance_tests(plugin: Any) -> Callable[[str], None]:
    """A test function running every conformance check for `plugin`, one test per check.

    In a plugin's tests: `test_conformance = conformance_tests(my_plugin)`.
    """
    import pytest  # only here: the kit itself must import without pytest (hookchain check)

    from framework.testing._checks import CHECKS

    reports: dict[str, PluginReport] = {}

    @pytest.mark.parametrize("check", list(CHECKS))
    def test_conformance(check: str) -> None:
        if "report" not in reports:
            reports["report"] = suite_report(plugin)
        result = reports["report"].checks[check]
        if result.status == "fail":
            raise AssertionError(f"{check} ({CHECKS[check]}): {result.reason}")

    return test_conformance
