"""Each conformance check can fail: one broken plugin per check fails exactly that check."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from framework import PluginInfo
from framework.testing import CHECKS, run_suite

BROKEN = Path(__file__).parent / "broken_plugins"

# Stem of a broken plugin → the one check it must fail. Every check has at least one; some have
# more, one per distinct way of breaking it.
EXPECTED_FAILURE = {
    "calls_next_twice": "call-next-once",
    "wrong_result_type": "valid-result",
    "copies_result": "passthrough",
    "swallows_errors": "downstream-error",
    "swallows_cancellation": "cancellation",
    "reorders_chunks": "streams",
    "wraps_stream_naively": "streams",
    "holds_chunks_for_the_store": "streams",
    "hangs_on_store": "budget",
    "ignores_budget_cancellation": "budget",
    "registers_more_each_load": "deterministic",
    "lenient_options": "options",
    "reads_files_directly": "no-direct-io",
}


def _module(stem: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"hookchain_broken_{stem}", BROKEN / f"{stem}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Correct plugins that pass every check, some of them close to a check's edge.
CONTROLS = {"well_behaved", "slow_first_call"}


def test_every_check_has_one_broken_plugin() -> None:
    assert set(EXPECTED_FAILURE.values()) == set(CHECKS)
    on_disk = {path.stem for path in BROKEN.glob("*.py")} - CONTROLS
    assert on_disk == set(EXPECTED_FAILURE)


@pytest.mark.anyio
@pytest.mark.parametrize(("stem", "check"), sorted(EXPECTED_FAILURE.items()))
async def test_broken_plugin_fails_exactly_its_check(stem: str, check: str) -> None:
    report = await run_suite(_module(stem))
    assert list(report.failures()) == [check], report.failures()
    assert not report.ok
    assert report.checks[check].reason  # says what went wrong and where


@pytest.mark.anyio
async def test_well_behaved_plugin_passes_every_check() -> None:
    report = await run_suite(_module("well_behaved"))
    assert report.failures() == {}
    assert {name: result.status for name, result in report.checks.items()} == dict.fromkeys(
        CHECKS, "pass"
    )
    assert report.contract_versions == ["1.0", "1.1"]


@pytest.mark.anyio
async def test_declared_file_access_is_allowed_and_only_that_kind() -> None:
    module = _module("reads_files_directly")
    declared = module.plugin
    module.plugin = dataclasses.replace(declared, access=frozenset({"network"}))
    assert "no-direct-io" in (await run_suite(module)).failures()
    module.plugin = dataclasses.replace(declared, access=frozenset({"files"}))
    assert (await run_suite(module)).failures() == {}


@pytest.mark.anyio
async def test_plugin_outside_the_known_contracts_fails_every_check() -> None:
    module = _module("well_behaved")
    setattr(module, "plugin", PluginInfo(name="well-behaved", contract=">=2,<3"))  # noqa: B010
    report = await run_suite(module)
    assert set(report.failures()) == set(CHECKS)
    assert "incompatible" in report.checks["budget"].reason


@pytest.mark.anyio
async def test_blocking_inside_the_real_budget_then_waiting_on_a_stalled_store_passes() -> None:
    # Its chain takes longer than the short check budget plus any small grace (0.6 s of set-up,
    # then the cut-off wait), which a wall-clock race against the chain counts as a hang.
    report = await run_suite(_module("slow_first_call"))
    assert report.failures() == {}
    assert report.checks["budget"].status == "pass"


@pytest.mark.anyio
async def test_budget_failures_say_which_way_the_budget_was_broken() -> None:
    blocking = (await run_suite(_module("hangs_on_store"))).checks["budget"].reason
    assert "held the event loop" in blocking
    assert "budget 0.5s" in blocking
    ignoring = (await run_suite(_module("ignores_budget_cancellation"))).checks["budget"].reason
    assert "ignores its budget's cancellation" in ignoring


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("stem", "reason"),
    [
        ("reorders_chunks", "reordered"),
        ("wraps_stream_naively", "did not reach the stream below"),
        ("holds_chunks_for_the_store", "held chunk 0 back"),
    ],
)
async def test_each_way_of_breaking_a_stream_is_named(stem: str, reason: str) -> None:
    assert reason in (await run_suite(_module(stem))).checks["streams"].reason


def test_passthrough_takes_a_rewritten_input_but_not_a_rewritten_output() -> None:
    # A tool input rewritten for the harness (audited by the chain as the plugin's) is a
    # decision; the same rewrite with a changed output is not passing downstream's result on.
    from framework import ToolResult
    from framework.testing._checks import _changed_only_the_input

    downstream = ToolResult(output="ok")
    wrapped = downstream.model_copy(update={"updated_input": {"command": "jail true"}})
    assert _changed_only_the_input(wrapped, downstream)
    assert not _changed_only_the_input(wrapped.model_copy(update={"output": "x"}), downstream)
    assert not _changed_only_the_input(downstream.model_copy(), downstream)
