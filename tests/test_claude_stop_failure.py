"""Turns that end in an API error, a refusal among them: live (StopFailure) and in replay alike.

The fixtures in `data/claude_code/` were recorded from Claude Code 2.1.197 (see the README there).
"""

from __future__ import annotations

import json
import types
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import refusal_watch

from framework import Action, CallNext, Engine, Host, PluginInfo, TurnComplete, TurnResult, hookimpl
from framework.claude_code import mapping as cmap
from framework.claude_code.bridge import ClaudeBridge
from framework.claude_code.install import DEFAULT_EVENTS
from framework.core.contract import Classic, ClassicResult, TurnStart, TurnStep
from framework.core.engine import AgentInfo
from framework.replay.reader import read_transcripts
from framework.replay.rebuild import Session

DATA = Path(__file__).parent / "data" / "claude_code"
TRANSCRIPT = DATA / "refusal_then_task_stop.jsonl"
HOOKS = DATA / "refusal_then_task_stop.hooks.jsonl"
REFUSAL_NOTICE = "Refusal: the model's reply was stopped"
TASK_STOP_NOTICE = "within 30 minutes of a refusal"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def recorded_hooks() -> list[dict[str, Any]]:
    return [json.loads(line) for line in HOOKS.read_text(encoding="utf-8").splitlines() if line]


def recorded_failure() -> dict[str, Any]:
    [failure] = [p for p in recorded_hooks() if p["hook_event_name"] == "StopFailure"]
    return failure


# -- the mapping -----------------------------------------------------------------------------------


def test_installed_by_default_stop_failure_and_subagent_start() -> None:
    assert {"StopFailure", "SubagentStart"} <= set(DEFAULT_EVENTS)


def test_the_recorded_stop_failure_of_a_refusal_is_a_refused_turn_complete() -> None:
    failure = recorded_failure()
    assert failure["error"] == "invalid_request"  # what 2.1.197 sends for a refusal
    turn = cmap.stop_failure(failure, "s:1")
    assert turn.reason == "refusal"
    assert turn.agent_id is None
    assert turn.turn_id == "s:1"
    assert turn.last_message == failure["last_assistant_message"]


@pytest.mark.parametrize(
    ("error", "text", "reason"),
    [
        ("rate_limit", "API Error: Rate limited", "api_error"),
        ("overloaded", "API Error: 529 Overloaded", "api_error"),
        ("server_error", "API Error: 500", "api_error"),
        ("invalid_request", "API Error: 400 prompt is too long", "api_error"),
        ("max_output_tokens", "API Error: output limit", "max_tokens"),
        (None, None, "api_error"),
    ],
)
def test_other_api_errors_end_the_turn_with_their_own_reason(
    error: str | None, text: str | None, reason: str
) -> None:
    payload: dict[str, Any] = {"session_id": "s", "hook_event_name": "StopFailure"}
    if error is not None:
        payload["error"] = error
    if text is not None:
        payload["last_assistant_message"] = text
    assert cmap.stop_failure(payload, "s:1").reason == reason


# Seen from 2.1.197 when the refusal carries a category: the text changes, the kind does not.
CYBER_TEXT = (
    "API Error: Opus 4.8 (1M context)'s safeguards flagged this message for a cybersecurity "
    "topic. If your work requires this access, you can apply for an exemption: "
    "https://claude.com/form/cyber-use-case\n\nTry rephrasing the request in a new session or "
    "change your model."
)


def first_turn_tail() -> list[bytes]:
    """The recorded transcript up to the refusal's records: what a StopFailure's tail holds."""
    lines = TRANSCRIPT.read_bytes().splitlines()
    end = next(i for i, line in enumerate(lines) if b"model_refusal_no_fallback" in line)
    return lines[: end + 1]


def test_a_refusal_worded_by_its_category_is_still_a_refusal() -> None:
    payload = {**recorded_failure(), "last_assistant_message": CYBER_TEXT}
    assert cmap.stop_failure(payload, "s:1").reason == "refusal"


def test_the_transcript_tail_decides_when_the_text_is_unknown() -> None:
    payload = {**recorded_failure(), "last_assistant_message": "API Error: worded anew"}
    assert cmap.stop_failure(payload, "s:1").reason == "api_error"
    assert cmap.stop_failure(payload, "s:1", first_turn_tail()).reason == "refusal"
    without_system = [line for line in first_turn_tail() if b'"type":"system"' not in line]
    assert cmap.stop_failure(payload, "s:1", without_system).reason == "refusal"


def test_a_subagents_stop_failure_ends_the_agents_turn() -> None:
    payload = {**recorded_failure(), "agent_id": "a1"}
    assert cmap.stop_failure(payload, "s:agent:a1").agent_id == "a1"


# -- replay ----------------------------------------------------------------------------------------


def only_session(path: Path) -> Session:
    [session] = read_transcripts([path]).sessions
    return session


def completes(session: Session) -> list[TurnComplete]:
    return [step.event for step in session.walk() if isinstance(step.event, TurnComplete)]


def test_replay_of_the_recorded_session_ends_the_refused_turn_with_refusal() -> None:
    session = only_session(TRANSCRIPT)
    assert [turn.reason for turn in completes(session)] == ["refusal", "end_turn"]
    first = next(step for step in session.walk() if isinstance(step.event, TurnStep))
    assert first.chunks[-1].kind == "stop"
    assert first.chunks[-1].stop_reason == "refusal"


def variant(tmp_path: Path, *, system: bool, stop_reason: object, text: str, error: str) -> Path:
    """The recorded transcript with its refusal records changed."""
    lines = []
    for line in TRANSCRIPT.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "system" and not system:
            continue
        if record.get("isApiErrorMessage"):
            record["error"] = error
            record["message"]["stop_reason"] = stop_reason
            record["message"]["content"] = [{"type": "text", "text": text}]
        lines.append(json.dumps(record))
    path = tmp_path / "variant.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


POLICY = "API Error: Claude Code is unable to respond to this request, which appears to violate"


@pytest.mark.parametrize(
    ("system", "stop_reason", "text", "error", "reason"),
    [
        (False, "refusal", POLICY, "invalid_request", "refusal"),  # no system record
        (False, None, POLICY, "invalid_request", "refusal"),  # only the text says so
        (True, None, "API Error: something", "invalid_request", "refusal"),  # the system record
        (False, None, "API Error: Rate limited", "rate_limit", "api_error"),
        (False, None, "API Error: too long", "max_output_tokens", "max_tokens"),
    ],
)
def test_replay_reads_a_refusal_from_any_of_its_records(
    tmp_path: Path, system: bool, stop_reason: object, text: str, error: str, reason: str
) -> None:
    path = variant(tmp_path, system=system, stop_reason=stop_reason, text=text, error=error)
    assert [turn.reason for turn in completes(only_session(path))] == [reason, "end_turn"]


# -- live, through the bridge ----------------------------------------------------------------------


def turn_recorder(seen: list[TurnComplete]) -> types.ModuleType:
    """A plugin that records every turn.complete it sees (as loop-breaker and observer do)."""
    module = types.ModuleType("turn_recorder")

    @hookimpl
    def register(on: Any, options: Any) -> None:
        async def complete(engine: Engine, event: TurnComplete, call_next: CallNext) -> TurnResult:
            seen.append(event)
            result: TurnResult = await call_next(event)
            return result

        on("turn.complete", complete)

    module.plugin = PluginInfo(name="turn-recorder", contract=">=1,<2")  # type: ignore[attr-defined]
    module.register = register  # type: ignore[attr-defined]
    return module


@asynccontextmanager
async def bridged(*plugins: Any) -> AsyncIterator[ClaudeBridge]:
    async with (
        Host(plugins=list(plugins), entry_points=False, store="memory://", env={}) as host,
        anyio.create_task_group() as task_group,
    ):
        bridge = ClaudeBridge(host, task_group)
        try:
            yield bridge
        finally:
            bridge.cancel_all()


async def play(bridge: ClaudeBridge, payloads: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each payload's event name and the `systemMessage` of its answer ("" when none)."""
    shown = []
    for payload in payloads:
        answer = await bridge.answer(json.dumps(payload).encode())
        assert answer.exit_code == 0, answer.stderr
        output = json.loads(answer.stdout) if answer.stdout else {}
        shown.append((payload["hook_event_name"], str(output.get("systemMessage", ""))))
    return shown


@pytest.mark.anyio
async def test_a_live_refusal_is_counted_shown_once_at_the_next_prompt_and_opens_the_window() -> (
    None
):
    seen: list[TurnComplete] = []
    async with bridged(refusal_watch, turn_recorder(seen)) as bridge:
        shown = await play(bridge, recorded_hooks())
        store = bridge.host.store.namespace("refusal-watch")
        labels = [(await store.get(key))["label"] for key in await store.keys("log:")]
    assert [(turn.turn_id.split(":")[-1], turn.reason) for turn in seen] == [
        ("1", "refusal"),
        ("2", "end_turn"),
    ]
    events = [name for name, _ in shown]
    failure = events.index("StopFailure")
    assert shown[failure][1] == ""  # Claude Code ignores this answer
    after = shown[failure + 1]
    assert after[0] == "UserPromptSubmit"
    assert after[1].count(REFUSAL_NOTICE) == 1, after[1]
    assert sum(text.count(REFUSAL_NOTICE) for _, text in shown) == 1, shown
    stops = [text for name, text in shown if TASK_STOP_NOTICE in text]
    assert len(stops) == 1, shown
    assert sorted(labels) == ["step", "taskstop"]


@pytest.mark.anyio
async def test_a_live_refusal_of_unknown_wording_is_read_from_the_transcript(
    tmp_path: Path,
) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(b"\n".join(first_turn_tail()) + b"\n")
    hooks = recorded_hooks()
    failure = {
        **recorded_failure(),
        "transcript_path": str(transcript),
        "last_assistant_message": "API Error: worded anew",
    }
    async with bridged(refusal_watch) as bridge:
        shown = await play(bridge, [hooks[0], hooks[1], failure, hooks[3]])
    assert shown[-1][1].count(REFUSAL_NOTICE) == 1, shown


@pytest.mark.anyio
async def test_the_next_prompt_reaching_the_host_first_still_carries_the_notice() -> None:
    """Claude Code runs StopFailure without waiting for it: under 2.1.197 the next prompt's hook
    was seen reaching the host first. That prompt waits (briefly) for the turn's end."""
    hooks = recorded_hooks()
    answers: list[tuple[str, str]] = []
    async with bridged(refusal_watch) as bridge:
        await play(bridge, [hooks[0], hooks[1]])

        async def next_prompt() -> None:
            answers.extend(await play(bridge, [hooks[3]]))

        async with anyio.create_task_group() as group:
            group.start_soon(next_prompt)
            await anyio.sleep(0.05)
            await play(bridge, [recorded_failure()])
    [(_, text)] = answers
    assert text.count(REFUSAL_NOTICE) == 1


@pytest.mark.anyio
async def test_a_prompt_after_an_interrupted_turn_waits_only_briefly() -> None:
    hooks = recorded_hooks()
    async with bridged(refusal_watch) as bridge:
        await play(bridge, [hooks[0], hooks[1]])
        started = anyio.current_time()
        await play(bridge, [hooks[3]])  # no Stop, no StopFailure came: an interrupt
        assert anyio.current_time() - started < 1.5


@pytest.mark.anyio
async def test_held_lines_wait_for_an_answer_claude_code_shows() -> None:
    async with bridged(refusal_watch) as bridge:
        hooks = recorded_hooks()
        start, prompt = hooks[0], hooks[1]
        notification = {
            "session_id": start["session_id"],
            "hook_event_name": "Notification",
            "message": "Claude is waiting for your input",
        }
        shown = await play(bridge, [start, prompt, recorded_failure(), notification])
        assert all(REFUSAL_NOTICE not in text for _, text in shown)
        [(_, later)] = await play(bridge, [hooks[4]])  # the next PreToolUse
    assert later.count(REFUSAL_NOTICE) == 1


def test_the_same_line_from_one_plugin_is_shown_once() -> None:
    answer = cmap.with_person_messages(
        "UserPromptSubmit", cmap.HookAnswer(stdout='{"systemMessage":"[x] a"}'), ["[x] a", "[y] b"]
    )
    assert answer is not None
    assert json.loads(answer.stdout)["systemMessage"] == "[x] a\n[y] b"
    assert cmap.with_person_messages("StopFailure", cmap.NO_ANSWER, ["[x] a"]) is None
    assert cmap.with_person_messages("SessionEnd", cmap.NO_ANSWER, ["[x] a"]) is None
    assert cmap.with_person_messages("Stop", cmap.HookAnswer(exit_code=2), ["[x] a"]) is None


def test_one_channel_for_the_person_one_line_per_text_and_the_newest_status() -> None:
    actions = [
        Action("rw", "toast", "refused", "turn.step"),
        Action("rw", "transcript", "refused", "turn.step"),
        Action("rw", "status", "0 refusals", "turn.step"),
        Action("other", "toast", "refused", "turn.step"),
        Action("other", "status", "other status", "turn.step"),
        Action("rw", "status", "1 refusal", "turn.complete"),
        Action("rw", "append", "for the model", "turn.complete"),
    ]
    assert cmap.person_messages(actions) == [
        "[rw] refused",
        "[other] refused",
        "[other] other status",
        "[rw] 1 refusal",
    ]


def subagent_watcher(seen: list[Any]) -> types.ModuleType:
    """A plugin that records subagent turn starts, the agents list then, and the raw hook."""
    module = types.ModuleType("subagent_watcher")

    @hookimpl
    def register(on: Any, options: Any) -> None:
        async def started(engine: Engine, event: TurnStart, call_next: CallNext) -> None:
            seen.append(("turn.start", event.agent_id, await engine.agents.list()))
            await call_next(event)

        async def raw(engine: Engine, event: Classic, call_next: CallNext) -> ClassicResult:
            seen.append(("classic", event.hook_name))
            result: ClassicResult = await call_next(event)
            return result

        on("turn.start", started, match={"agent_id": "a96f816"})
        on("classic.SubagentStart", raw)

    module.plugin = PluginInfo(name="subagent-watcher", contract=">=1,<2")  # type: ignore[attr-defined]
    module.register = register  # type: ignore[attr-defined]
    return module


@pytest.mark.anyio
async def test_subagent_start_starts_the_agents_turn_and_names_its_type() -> None:
    """The shape of a real SubagentStart payload (shared corpus): agent_id and agent_type."""
    seen: list[Any] = []
    payload = {
        "session_id": "s",
        "cwd": "/w",
        "hook_event_name": "SubagentStart",
        "agent_id": "a96f816",
        "agent_type": "builder",
    }
    async with bridged(subagent_watcher(seen)) as bridge:
        await play(bridge, [payload])
    assert seen == [
        ("turn.start", "a96f816", [AgentInfo(id="a96f816", type="builder")]),
        ("classic", "SubagentStart"),
    ]


def test_an_older_transcripts_error_message_after_a_refused_step_is_no_second_refusal() -> None:
    """1.x/2.0 transcripts: a model step stopped with `refusal`, then Claude Code's own error
    message (stop_reason `stop_sequence`); a later turn has only the error message."""
    example = Path(__file__).resolve().parents[1] / "examples" / "transcripts"
    session = only_session(example / "2026-03-03_refusal.jsonl")
    assert [turn.reason for turn in completes(session)] == ["refusal", "refusal"]
    refused_steps = [
        step.event.turn_id
        for step in session.walk()
        if isinstance(step.event, TurnStep) and step.chunks[-1].stop_reason == "refusal"
    ]
    assert len(refused_steps) == 2 and len(set(refused_steps)) == 2  # one per turn
