"""Runs rebuilt transcript sessions through a `Host` and collects what each plugin did."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from framework.core.contract import (
    Continue,
    Event,
    SessionStart,
    ToolCall,
    TurnComplete,
    TurnResult,
    TurnStep,
    neutral_result,
)
from framework.core.dispatch import Action, current_dispatch
from framework.core.engine import AgentInfo, FakeClock
from framework.core.host import Host
from framework.core.settings import HostSettings
from framework.core.tap import ChunkStream, drain
from framework.replay.reader import (
    RECORDED_BY_PREFIX,
    Session,
    Step,
    TranscriptGroup,
    Transcripts,
    group_transcripts,
    read_group,
    transcript_files,
)

REPORT_KINDS: Mapping[str, str] = {
    "note": "note",
    "append": "note",
    "deny": "deny",
    "drop": "drop",
    "context": "context",
    "continue": "continue",
    "toast": "toast",
    "transcript": "transcript",
}
"""Host action kinds shown in a replay report, and the report kind each becomes."""

_LABEL_FIELDS = ("command", "file_path", "notebook_path", "path", "pattern", "url", "query")
_LABEL_WIDTH = 60

Progress = Callable[[int, int], None]
GroupProgress = Callable[["GroupReport", int], None]
"""Called with each group replayed and the total bytes of the input."""


def scratch_records(scratch: Path) -> dict[str, int]:
    """How many JSON lines each plugin wrote into its sandbox folder during the replay."""
    counts: dict[str, int] = {}
    for folder in sorted(p for p in scratch.iterdir() if p.is_dir()) if scratch.is_dir() else []:
        files = sorted(folder.rglob("*.jsonl"))
        lines = sum(1 for f in files for line in f.open(encoding="utf-8") if line.strip())
        if lines:
            counts[folder.name] = lines
    return counts


@dataclass(frozen=True, slots=True)
class ReplayAction:
    """One thing a plugin did during the replay, with where in the session it happened."""

    session_id: str
    by: str
    event: str
    kind: str
    tool_use_id: str | None
    index: int
    text: str
    tool: str | None = None
    label: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "by": self.by,
            "event": self.event,
            "kind": self.kind,
            "tool_use_id": self.tool_use_id,
            "index": self.index,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """Counts of one replayed session."""

    session_id: str
    path: str
    first_ms: int
    last_ms: int
    events: int
    prompts: int
    turns: int
    tool_calls: int
    tool_calls_main: int
    actions: int

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "path": self.path,
            "first_ms": self.first_ms,
            "last_ms": self.last_ms,
            "events": self.events,
            "prompts": self.prompts,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "tool_calls_main": self.tool_calls_main,
            "actions": self.actions,
        }


@dataclass(frozen=True, slots=True)
class PluginStatus:
    """A plugin the replay host tried to load."""

    name: str
    status: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """The whole replay: sessions, actions in order, and the input's reading counts."""

    sessions: tuple[SessionSummary, ...]
    actions: tuple[ReplayAction, ...]
    plugins: tuple[PluginStatus, ...]
    files: int
    skipped_lines: int
    duplicate_records: int
    failures: Mapping[str, int] = field(default_factory=dict)
    logged: Mapping[str, int] = field(default_factory=dict)
    into: str | None = None
    """Where the plugins' files were kept (`--into`); None when they went to a throwaway folder."""
    sessions_read: int = 0
    """Sessions read from the input, before `--since`/`--until` chose among them."""
    counts: Mapping[str, Mapping[str, int]] | None = None
    """Actions per plugin and kind, when `actions` was not kept; None: counted from `actions`."""

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sessions)

    def summary(self) -> dict[str, Any]:
        per_plugin: dict[str, dict[str, int]] = {
            p.name: {} for p in self.plugins if p.status == "loaded"
        }
        for name, kinds in (
            self.counts if self.counts is not None else _count(self.actions)
        ).items():
            per_plugin[name] = dict(kinds)
        return {
            "sessions": len(self.sessions),
            "events": self.events,
            "tool_calls": sum(s.tool_calls for s in self.sessions),
            "tool_calls_main": sum(s.tool_calls_main for s in self.sessions),
            "files": self.files,
            "skipped_lines": self.skipped_lines,
            "duplicate_records": self.duplicate_records,
            "plugins": per_plugin,
            "handler_failures": dict(self.failures),
            "logged_records": dict(self.logged),
            "into": self.into,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "sessions": [s.to_json() for s in self.sessions],
            "actions": [a.to_json() for a in self.actions],
            "summary": self.summary(),
        }


def _count(
    actions: Iterable[ReplayAction], counts: dict[str, dict[str, int]] | None = None
) -> dict[str, dict[str, int]]:
    """Actions per plugin and kind, added to `counts` when given."""
    counts = {} if counts is None else counts
    for action in actions:
        kinds = counts.setdefault(action.by, {})
        kinds[action.kind] = kinds.get(action.kind, 0) + 1
    return counts


def tool_label(tool: str, tool_input: Mapping[str, Any]) -> str:
    """A short, one-line label of a tool call: its command, path, pattern or description."""
    value: Any = next((tool_input[k] for k in _LABEL_FIELDS if k in tool_input), None)
    if value is None:
        value = tool_input.get("description") or next(
            (v for v in tool_input.values() if isinstance(v, str)), ""
        )
    return one_line(str(value), _LABEL_WIDTH)


def one_line(text: str, width: int) -> str:
    """`text` with its whitespace runs made single spaces, cut to `width` with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@dataclass(frozen=True, slots=True)
class Window:
    """The sessions a replay keeps: active on or after `since_ms` and started by `until_ms`."""

    since_ms: int | None = None
    until_ms: int | None = None

    def keeps(self, first_ms: int, last_ms: int) -> bool:
        if self.since_ms is not None and last_ms < self.since_ms:
            return False
        return self.until_ms is None or first_ms <= self.until_ms

    def may_keep(self, group: TranscriptGroup) -> bool:
        """False only when no session of the group can be kept: its files were last written
        before `since`, or its first record comes after `until` (0 times are unknown)."""
        if self.since_ms is not None and group.modified_ms and group.modified_ms < self.since_ms:
            return False
        return not (self.until_ms is not None and group.first_ms > self.until_ms)


@dataclass(frozen=True, slots=True)
class SessionReport:
    """One replayed session: its counts and what the plugins did, in order."""

    summary: SessionSummary
    actions: tuple[ReplayAction, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.summary.to_json(), "actions": [a.to_json() for a in self.actions]}


@dataclass(frozen=True, slots=True)
class GroupReport:
    """The sessions of one group of files, replayed, and what reading the files counted."""

    sessions: tuple[SessionReport, ...]
    files: int
    size: int
    skipped_lines: int
    duplicate_records: int
    sessions_read: int

    @property
    def events(self) -> int:
        return sum(s.summary.events for s in self.sessions)


async def replay_session(host: Host, clock: FakeClock, session: Session) -> SessionReport:
    """Replay one session through an open host whose clock is `clock`.

    The clock starts at the session's first record, so a session replays the same alone, after
    others, or in another process (`--jobs`).
    """
    clock.set(session.first_ms)
    run = _SessionRun(host, clock, session)
    await run.run()
    return SessionReport(run.summary(), tuple(run.actions))


async def replay_sessions(
    host: Host,
    clock: FakeClock,
    transcripts: Transcripts,
    *,
    since_ms: int | None = None,
    progress: Progress | None = None,
) -> ReplayReport:
    """Replay every session (oldest first) through an open host whose clock is `clock`."""
    window = Window(since_ms=since_ms)
    chosen = [s for s in transcripts.sessions if window.keeps(s.first_ms, s.last_ms)]
    chosen.sort(key=lambda s: (s.first_ms, s.session_id))
    total = 0 if progress is None else sum(1 for s in chosen for _ in s.walk())
    done = 0
    reports: list[SessionReport] = []
    # The transcripts, the host and its plugins live as long as the replay: freeze them so the
    # collector does not walk them again and again while events come and go.
    gc.freeze()
    try:
        for session in chosen:
            report = await replay_session(host, clock, session)
            reports.append(report)
            done += report.summary.events
            if progress is not None:
                progress(done, total)
    finally:
        gc.unfreeze()
    group = GroupReport(
        tuple(reports),
        transcripts.files,
        0,
        transcripts.skipped_lines,
        transcripts.duplicate_records,
        len(transcripts.sessions),
    )
    return ReplayCollector(host_status(host)).add(group).report(host_failures(host))


async def replay_group(
    host: Host, clock: FakeClock, group: TranscriptGroup, window: Window
) -> GroupReport:
    """Read one group of files, replay its sessions in the window (oldest first), and forget it."""
    transcripts = read_group(group)
    chosen = [s for s in transcripts.sessions if window.keeps(s.first_ms, s.last_ms)]
    chosen.sort(key=lambda s: (s.first_ms, s.session_id))
    reports = [await replay_session(host, clock, session) for session in chosen]
    report = GroupReport(
        sessions=tuple(reports),
        files=transcripts.files,
        size=group.size,
        skipped_lines=transcripts.skipped_lines,
        duplicate_records=transcripts.duplicate_records,
        sessions_read=len(transcripts.sessions),
    )
    del transcripts, chosen, reports
    _SWEEP.after(group.size)
    return report


def host_status(host: Host) -> tuple[PluginStatus, ...]:
    return tuple(PluginStatus(p.name, p.status, p.error) for p in host.plugins)


def host_failures(host: Host) -> dict[str, int]:
    return {f"{plugin}/{event}": n for (plugin, event), n in host.failures.items()}


class ReplayCollector:
    """Adds group reports up into the whole replay's report, in the order they are added, and
    hands each session on to `on_session` and each group to `progress` as it comes."""

    def __init__(
        self,
        plugins: tuple[PluginStatus, ...],
        *,
        keep: bool = True,
        on_session: Callable[[SessionReport], None] | None = None,
        progress: GroupProgress | None = None,
        total: int = 0,
    ) -> None:
        self.plugins = plugins
        self.keep = keep
        self.on_session = on_session
        self.progress = progress
        self.total = total
        self.sessions: list[SessionSummary] = []
        self.actions: list[ReplayAction] = []
        self.files = self.size = self.skipped = self.duplicates = self.events = 0
        self.sessions_read = 0
        self.counts: dict[str, dict[str, int]] = {}

    def add(self, group: GroupReport) -> ReplayCollector:
        self.files += group.files
        self.size += group.size
        self.skipped += group.skipped_lines
        self.duplicates += group.duplicate_records
        self.sessions_read += group.sessions_read
        self.events += group.events
        for session in group.sessions:
            self.sessions.append(session.summary)
            if self.keep:
                self.actions.extend(session.actions)
            _count(session.actions, self.counts)
            if self.on_session is not None:
                self.on_session(session)
        if self.progress is not None:
            self.progress(group, self.total)
        return self

    def report(
        self,
        failures: Mapping[str, int],
        logged: Mapping[str, int] | None = None,
        into: Path | None = None,
    ) -> ReplayReport:
        return ReplayReport(
            sessions=tuple(self.sessions),
            actions=tuple(self.actions),
            plugins=self.plugins,
            files=self.files,
            skipped_lines=self.skipped,
            duplicate_records=self.duplicates,
            failures=dict(failures),
            logged=dict(logged or {}),
            into=None if into is None else str(into),
            sessions_read=self.sessions_read,
            counts=None if self.keep else self.counts,
        )


def chosen_groups(paths: Sequence[Path], window: Window) -> list[TranscriptGroup]:
    """The session groups under `paths` that may hold a session in `window`, oldest first."""
    return [g for g in group_transcripts(transcript_files(paths)) if window.may_keep(g)]


async def replay_paths(
    paths: Sequence[Path],
    *,
    plugins: Sequence[Any] | None = None,
    entry_points: bool = True,
    only: Iterable[str] | None = None,
    store: str = "memory://",
    settings: HostSettings | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    window: Window | None = None,
    sandbox: Path | None = None,
    into: Path | None = None,
    keep_actions: bool = True,
    on_start: Callable[[tuple[PluginStatus, ...]], None] | None = None,
    on_session: Callable[[SessionReport], None] | None = None,
    progress: GroupProgress | None = None,
    groups: Sequence[TranscriptGroup] | None = None,
) -> ReplayReport:
    """Read the transcripts under `paths` and replay them through a fresh host, one session
    group at a time (memory follows the largest session, not the input).

    Plugins' own files go to `into` (or `sandbox`, the same: kept, the report says where) or to
    a throwaway folder. `on_start` sees the plugins once the host is open, `on_session` each
    session's report as soon as it is replayed, `progress(group, total_bytes)` each group done;
    `keep_actions=False` leaves the actions out of the returned report (they went to
    `on_session`), so a long replay keeps only counts.
    """
    window = window or Window(since_ms, until_ms)
    chosen = list(groups) if groups is not None else chosen_groups(paths, window)
    total = sum(g.size for g in chosen)
    clock = FakeClock(start_ms=0, instant_sleep=True)
    kept = into if into is not None else sandbox
    with TemporaryDirectory(prefix="hookchain-replay-") as folder:
        scratch = kept if kept is not None else Path(folder)
        host = Host(
            plugins=plugins,
            entry_points=entry_points,
            settings=with_only(settings, only),
            store=store,
            clock=clock,
            sandbox=scratch,
        )
        async with host:
            with settled():
                collector = ReplayCollector(
                    host_status(host),
                    keep=keep_actions,
                    on_session=on_session,
                    progress=progress,
                    total=total,
                )
                if on_start is not None:
                    on_start(collector.plugins)
                for group in chosen:
                    collector.add(await replay_group(host, clock, group, window))
            failures = host_failures(host)
        return collector.report(failures, scratch_records(scratch), kept)


@contextmanager
def settled() -> Iterator[None]:
    """The open host, its plugins and every module live as long as the replay: frozen, the
    collector does not walk them again and again; what each session group makes is collected
    as usual (freezing the groups too would keep their garbage until the end)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def with_only(settings: HostSettings | None, only: Iterable[str] | None) -> HostSettings | None:
    """`settings` narrowed to the plugins named in `only` (all of them when empty)."""
    names = list(only or ())
    if not names:
        return settings
    base = settings if settings is not None else HostSettings()
    return base.model_copy(update={"plugins": names})


_COLLECT_AFTER_BYTES = 64 << 20


class _Sweep:
    """A full collection once every `_COLLECT_AFTER_BYTES` of groups replayed in this process.

    Cyclic garbage left to the collector's own pace piles up over a long history and fragments
    the heap (a 10x history once took 1.5x the memory of 1x), so it is collected now and then;
    not after every group: a full collection walks all that the plugins keep across sessions,
    more with every group, and on the shared transcripts it found nothing to free (0 objects,
    while 70 of them took a tenth of a 10x replay's reading time). Per process: forked
    workers each count their own groups.
    """

    def __init__(self) -> None:
        self.pending = 0

    def after(self, size: int) -> None:
        self.pending += size
        if self.pending >= _COLLECT_AFTER_BYTES:
            self.pending = 0
            gc.collect()


_SWEEP = _Sweep()

_HOME = re.compile(r"^(/Users/[^/]+|/home/[^/]+|/root)(?:/|$)")


def recorded_home(cwd: str) -> str | None:
    """The home folder a recorded cwd sits in (`/Users/x`, `/home/x`, `/root`), if it shows one."""
    found = _HOME.match(cwd)
    return found.group(1) if found else None


class _SessionRun:
    """Dispatches one session's steps in order with scripted terminals."""

    def __init__(self, host: Host, clock: FakeClock, session: Session) -> None:
        self.host = host
        self.clock = clock
        self.session = session
        self.index = 0
        self.actions: list[ReplayAction] = []
        self.prompts = self.turns = self.tool_calls = self.tool_calls_main = 0

    async def run(self) -> None:
        first = self.session.steps[0].event if self.session.steps else None
        home = recorded_home(first.cwd if isinstance(first, SessionStart) else "")
        if home is not None:
            # `~` in the recorded calls meant the recorded user's home, not the replaying one's.
            self.host.update_session(self.session.session_id, env={"HOME": home})
        for step in self.session.steps:
            await self.step(step)
        self.collect(self.host.take_pending(self.session.session_id), None, self.index - 1)

    async def step(self, step: Step) -> None:
        index = self.index
        self.index += 1
        self.clock.follow(step.at_ms)
        event = step.event
        self.count(event)
        outcome = await self.host.dispatch(event, self.terminal(step))
        if outcome._actions:  # most dispatches record nothing: `actions` would make a list
            self.collect(outcome._actions, event, index)
        if type(event) is TurnStep:
            # The recorded chunks and taps over them are read with no await: the same callbacks
            # in the same order, without a coroutine per chunk.
            if not drain(outcome.result):
                await _drain(outcome.result)
            self.collect(self.host.take_pending(event.session_id), event, index)

    def count(self, event: Event) -> None:
        # Exact types: the replay builds every event itself, and a type test is cheaper than an
        # isinstance that fails (pydantic models check those through their metaclass).
        if type(event) is ToolCall:
            self.tool_calls += 1
            self.tool_calls_main += event.agent_id is None
        elif event.kind == "prompt.submit":
            self.prompts += 1
        elif event.kind == "turn.start":
            self.turns += 1

    def terminal(self, step: Step) -> Callable[[Any], Any]:
        kind = type(step.event)
        if kind is ToolCall:

            async def run_tool(_: Event) -> Any:
                if step.subagent:
                    self.note_agent(step)
                    await self.subagent(step.subagent)
                return step.recorded.to_tool_result()

            return run_tool
        if kind is TurnStep:

            async def run_step(_: Event) -> Any:
                return ChunkStream(step.chunks)

            return run_step
        if kind is TurnComplete and step.continuation is not None:
            recorded = TurnResult(
                continuation=Continue(reason=step.continuation, by=RECORDED_BY_PREFIX + "stop-hook")
            )

            async def blocked(_: Event) -> Any:
                return recorded

            return blocked
        return _neutral

    def note_agent(self, step: Step) -> None:
        """The subagent's type from the Task/Agent call that started it, before its first event,
        as the live host learns it: plugins keyed on agent types (a per-agent-type
        policy) then treat the replayed subagent as they would the live one."""
        call = step.event
        agent_id = next((a for s in step.subagent if (a := _agent_of(s.event))), None)
        if not isinstance(call, ToolCall) or agent_id is None:
            return
        kind = call.input.get("subagent_type")
        name = call.input.get("name") or call.input.get("description")
        self.host.note_agent(
            call.session_id,
            AgentInfo(
                id=agent_id,
                name=name if isinstance(name, str) else None,
                type=kind if isinstance(kind, str) and kind else None,
            ),
        )

    async def subagent(self, steps: tuple[Step, ...]) -> None:
        # The subagent's events come from the harness, not from inside the Task's dispatch.
        token = current_dispatch.set(None)
        try:
            for step in steps:
                await self.step(step)
        finally:
            current_dispatch.reset(token)

    def collect(self, actions: Sequence[Action], event: Event | None, index: int) -> None:
        if not actions:
            return
        call = event if isinstance(event, ToolCall) else None
        for action in actions:
            kind = REPORT_KINDS.get(action.kind)
            if kind is None or action.by.startswith(RECORDED_BY_PREFIX):
                continue
            self.actions.append(
                ReplayAction(
                    session_id=self.session.session_id,
                    by=action.by,
                    event=action.event or (event.name if event is not None else ""),
                    kind=kind,
                    tool_use_id=call.tool_use_id if call else None,
                    index=index,
                    text=action.text,
                    tool=call.tool if call else None,
                    label=tool_label(call.tool, call.input) if call else "",
                )
            )

    def summary(self) -> SessionSummary:
        session = self.session
        return SessionSummary(
            session_id=session.session_id,
            path=session.path,
            first_ms=session.first_ms,
            last_ms=session.last_ms,
            events=self.index,
            prompts=self.prompts,
            turns=self.turns,
            tool_calls=self.tool_calls,
            tool_calls_main=self.tool_calls_main,
            actions=len(self.actions),
        )


def _agent_of(event: Event) -> str | None:
    agent_id = getattr(event, "agent_id", None)
    return agent_id if isinstance(agent_id, str) else None


async def _neutral(seen: Event) -> Any:
    return neutral_result(seen)


async def _drain(stream: Any) -> None:
    """Read a step's stream to its end, as the harness would, then close it."""
    try:
        async for _ in stream:
            pass
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
