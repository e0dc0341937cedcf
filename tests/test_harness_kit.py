"""The testing kit's parts: builders, vectors, scripted terminals, the fake engine, the audit."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from framework import (
    EVENT_TYPES,
    ContractError,
    StreamChunk,
    ToolCall,
    ToolResult,
    is_valid_result,
)
from framework.testing import (
    FakeEngine,
    ProbeCallNext,
    RecordingStream,
    ScriptedTerminal,
    StalledStore,
    assert_conformant,
    classic,
    command_run,
    dispatch,
    load_vectors,
    make_host,
    prompt_context,
    prompt_submit,
    provenance,
    raises,
    returns,
    session_end,
    session_start,
    tool_call,
    turn_complete,
    turn_start,
    turn_step,
    vector_versions,
)
from framework.testing._audit import watching
from framework.testing._suite import admitted_versions

BROKEN = Path(__file__).parent / "broken_plugins"


def _module(stem: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"hookchain_kit_{stem}", BROKEN / f"{stem}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_builders_cover_every_event_kind() -> None:
    built = [
        session_start(),
        session_end(),
        prompt_submit("hi"),
        prompt_context(),
        turn_start(),
        turn_step(),
        turn_complete(),
        tool_call("Edit", {"file_path": "a.py"}),
        command_run("status"),
        classic("Notification", {"message": "x"}),
    ]
    assert {event.kind for event in built} == set(EVENT_TYPES)
    assert built[-1].name == "classic.Notification"


def test_tool_call_builder_gives_each_call_its_own_id() -> None:
    first, second = tool_call(), tool_call()
    assert first.tool_use_id != second.tool_use_id
    assert tool_call(tool_use_id="t-1").tool_use_id == "t-1"


def test_vectors_cover_every_event_and_answer_validly() -> None:
    assert "1.0" in vector_versions()
    vectors = load_vectors("1.0")
    assert {vector.event.kind for vector in vectors} == set(EVENT_TYPES)
    assert len({vector.id for vector in vectors}) == len(vectors)
    for vector in vectors:
        result = vector.result()
        if vector.event.result_type is not None:
            assert is_valid_result(vector.event, result), vector.id
            assert vector.result() is not result  # every run gets its own object
    steps = [vector for vector in vectors if vector.event.kind == "turn.step"]
    assert all(vector.chunks()[-1].kind == "stop" for vector in steps)


def test_unknown_vector_version_is_refused() -> None:
    with pytest.raises(ValueError, match="no conformance vectors"):
        load_vectors("0.9")


def test_admitted_versions_follow_the_plugin_range() -> None:
    assert admitted_versions(">=1,<2") == ["1.0", "1.1"]
    assert admitted_versions(">=1.0,<1.1") == ["1.0"]
    assert admitted_versions(">=2") == []
    assert admitted_versions("not a range") == []
    assert admitted_versions(">=1,<2", only="1.2") == []


@pytest.mark.anyio
async def test_recording_stream_sees_close_and_throw() -> None:
    chunks = [StreamChunk(kind="text", text="a"), StreamChunk(kind="stop", stop_reason="end_turn")]
    closed = RecordingStream(chunks)
    assert await closed.__anext__() is chunks[0]
    await closed.aclose()
    assert closed.closed

    thrown = RecordingStream(chunks)
    await thrown.__anext__()
    error = RuntimeError("from the caller")
    with pytest.raises(RuntimeError) as caught:
        await thrown.athrow(error)
    assert caught.value is error
    assert thrown.thrown == [error]


@pytest.mark.anyio
async def test_probe_runs_downstream_once_and_refuses_a_second_call() -> None:
    downstream = ToolResult(output="ok")
    event = tool_call()
    terminal = ScriptedTerminal(returns(downstream))
    probe = ProbeCallNext(terminal, event, plugin="p")
    assert await probe() is downstream
    with pytest.raises(ContractError, match="twice"):
        await probe()
    assert probe.calls == 2
    assert terminal.events == [event]


@pytest.mark.anyio
async def test_scripted_terminal_raises_the_same_object() -> None:
    error = OSError("disk full")
    with pytest.raises(OSError) as caught:
        await ScriptedTerminal(raises(error))(tool_call())
    assert caught.value is error


@pytest.mark.anyio
async def test_fake_engine_records_and_runs_spawned_work_on_drain() -> None:
    engine = FakeEngine("p")
    engine.ui.toast("hello")
    engine.transcript.line("a line")
    await engine.session.append("for the model")
    engine.spawn(engine.store.set, "k", {"n": 1})
    assert await engine.store.get("k") is None
    await engine.drain()
    assert await engine.store.get("k") == {"n": 1}
    assert await engine.store.update("k", lambda v: {"n": v["n"] + 1}) == {"n": 2}
    assert engine.recorder.of("toast") == ["hello"]
    assert engine.recorder.of("transcript") == ["a line"]
    assert engine.recorder.of("append") == ["for the model"]
    assert isinstance(await engine.dispatch(tool_call()), ToolResult)


@pytest.mark.anyio
async def test_stalled_store_never_answers() -> None:
    with anyio.move_on_after(0.05) as scope:
        await StalledStore().get("anything")
    assert scope.cancelled_caught


def test_audit_sees_file_access_only_while_watching(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    data.write_text("x", encoding="utf-8")
    with watching() as seen:
        data.read_text(encoding="utf-8")
        os.listdir(tmp_path)
    data.read_text(encoding="utf-8")
    assert [(access.kind, access.event) for access in seen] == [
        ("files", "open"),
        ("files", "os.listdir"),
    ]
    assert seen[0].target == str(data)


@pytest.mark.anyio
async def test_host_kit_dispatches_with_a_script_and_reads_provenance() -> None:
    plugin = _module("well_behaved")
    async with make_host(plugin) as host:
        failed = ToolResult(output="boom", is_error=True)
        outcome = await dispatch(host, ToolCall(tool_use_id="t", tool="Bash"), returns(failed))
        assert [note.by for note in outcome.result.notes] == ["well-behaved"]
        assert [action.kind for action in provenance(outcome, by="well-behaved")] == ["note"]
        assert provenance(outcome, kind="deny") == []
        denied = await dispatch(host, tool_call("Bash", {"command": "git push --force"}))
        assert denied.result.denial.by == "well-behaved"


def test_assert_conformant_names_every_failed_check() -> None:
    with pytest.raises(AssertionError, match=r"call-next-once: .*2 times"):
        assert_conformant(_module("calls_next_twice"))
    assert assert_conformant(_module("well_behaved")).ok


def test_fake_engine_data_dir_follows_the_hosts_rule(tmp_path: Path) -> None:
    plain = FakeEngine("p", cwd="/work/repo")
    assert not plain.sandboxed
    assert plain.data_dir() == Path("/work/repo/.hookchain/p")
    assert plain.data_dir("state") == Path("/work/repo/state")
    assert plain.data_dir("/var/p") == Path("/var/p")
    boxed = FakeEngine("p", cwd="/work/repo", sandbox=tmp_path)
    assert boxed.sandboxed
    assert boxed.data_dir() == boxed.data_dir("/var/p") == tmp_path / "p"


@pytest.mark.anyio
async def test_host_kit_sandbox_holds_every_plugins_files(tmp_path: Path) -> None:
    async with make_host(_module("well_behaved"), sandbox=tmp_path) as host:
        outcome = await dispatch(host, session_start(cwd="/work/repo"))
    statuses = [action.text for action in provenance(outcome, kind="status")]
    assert statuses == [f"session.start: files in {tmp_path / 'well-behaved'} (a sandbox)"]
