"""Testing kit for hookchain plugins: fixtures, event builders, scripted terminals, conformance."""

from __future__ import annotations

from framework.testing._builders import (
    classic,
    command_run,
    prompt_context,
    prompt_submit,
    session_end,
    session_start,
    tool_call,
    turn_complete,
    turn_start,
    turn_step,
)
from framework.testing._checks import CHECKS, CheckResult, DownstreamError
from framework.testing._fakes import FakeEngine, MemoryStore, StalledClock, StalledStore
from framework.testing._host_kit import (
    assert_conformant,
    conformance_tests,
    dispatch,
    make_host,
    provenance,
    suite_report,
)
from framework.testing._scripts import (
    ProbeCallNext,
    RecordingStream,
    Script,
    ScriptedTerminal,
    raises,
    returns,
    slow,
    streams,
)
from framework.testing._suite import PluginReport, run_suite
from framework.testing._vectors import Vector, load_vectors, vector_versions

__all__ = [
    "CHECKS",
    "CheckResult",
    "DownstreamError",
    "FakeEngine",
    "MemoryStore",
    "PluginReport",
    "ProbeCallNext",
    "RecordingStream",
    "Script",
    "ScriptedTerminal",
    "StalledClock",
    "StalledStore",
    "Vector",
    "assert_conformant",
    "classic",
    "command_run",
    "conformance_tests",
    "dispatch",
    "load_vectors",
    "make_host",
    "prompt_context",
    "prompt_submit",
    "provenance",
    "raises",
    "returns",
    "run_suite",
    "session_end",
    "session_start",
    "slow",
    "streams",
    "suite_report",
    "tool_call",
    "turn_complete",
    "turn_start",
    "turn_step",
    "vector_versions",
]
