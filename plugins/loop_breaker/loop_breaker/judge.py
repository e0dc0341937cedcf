"""Scores loop-breaker on labelled sessions: every labelled loop caught, no nudge anywhere else.

    python -m loop_breaker.judge LABELS.json [--corpus DIR] [-v] [--strict] [--json]
    python plugins/loop_breaker/benchmarks/judge.py [LABELS.json] ...   (the shared set by default)

The sessions are replayed through the host (`framework.replay_paths`, what `hookchain replay
--json` prints), with loop-breaker as the only plugin. Each nudge (a note on a tool result, or a
message appended after a blocked Stop) and each alert for the person (a toast) is placed at a
tool-call index: the position of its call among the file's `tool_use` blocks, in file order,
subagent calls included; a nudge after a blocked Stop is placed at the last call before it
(at -1 when there is none).

A LABELS file maps each session file (relative to `--corpus`, by default the LABELS file's folder)
to `{"episodes": [{"kind", "expect": "loop" | "unclear", "lo", "hi", "note", "nudge_by"?}], ...}`.
A `loop` episode is caught by a nudge at an index in `lo..nudge_by` (`nudge_by` defaults to
`hi`); an `unclear` one tolerates nudges without needing one. Any nudge or alert outside every
episode is false, and so is any in a replayed file the LABELS file does not name. The last line
printed is `caught=C/L false_nudges=F files=N` (F counts nudges and alerts).

Not part of the plugin's work: only this module (and no module of the plugin) imports replay.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from framework import ToolCall, read_transcripts, replay_paths

PLUGIN = "loop-breaker"
NUDGE_KINDS = {"note": "nudge", "toast": "alert"}
"""Replay report kinds that reach the model (a nudge) or the person (an alert). The transcript
line written with each alert is the same decision as its toast and is not counted again."""


@dataclass(frozen=True, slots=True)
class Episode:
    kind: str
    expect: str
    lo: int
    hi: int
    nudge_by: int
    note: str = ""

    def covers(self, index: int) -> bool:
        return self.lo <= index <= self.hi


@dataclass(frozen=True, slots=True)
class Said:
    """One nudge or alert of the plugin, placed at a tool-call index of its file."""

    file: str
    index: int
    kind: str
    detector: str
    text: str


@dataclass(slots=True)
class FileScore:
    file: str
    said: list[Said] = field(default_factory=list)
    caught: list[Episode] = field(default_factory=list)
    missed: list[Episode] = field(default_factory=list)
    false: list[Said] = field(default_factory=list)


@dataclass(slots=True)
class Score:
    files: dict[str, FileScore]

    @property
    def loops(self) -> int:
        return sum(len(f.caught) + len(f.missed) for f in self.files.values())

    @property
    def caught(self) -> int:
        return sum(len(f.caught) for f in self.files.values())

    @property
    def false_nudges(self) -> list[Said]:
        return [said for f in self.files.values() for said in f.false]

    def line(self) -> str:
        return (
            f"caught={self.caught}/{self.loops} false_nudges={len(self.false_nudges)} "
            f"files={len(self.files)}"
        )


def read_labels(path: Path) -> dict[str, list[Episode]]:
    """The LABELS file's episodes per file name; a malformed entry is an error naming it."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a LABELS file is an object of file name -> label")
    labels: dict[str, list[Episode]] = {}
    for name, entry in raw.items():
        episodes = entry.get("episodes", []) if isinstance(entry, dict) else None
        if not isinstance(episodes, list):
            raise ValueError(f"{path}: {name}: `episodes` must be a list")
        labels[name] = []
        for episode in episodes:
            try:
                lo, hi = int(episode["lo"]), int(episode["hi"])
                expect = str(episode.get("expect", "loop"))
                by = int(episode.get("nudge_by", hi))
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(f"{path}: {name}: an episode needs int lo and hi") from error
            if expect not in ("loop", "unclear"):
                raise ValueError(f"{path}: {name}: expect is `loop` or `unclear`, not {expect!r}")
            note = str(episode.get("note", ""))
            labels[name].append(Episode(str(episode.get("kind", "")), expect, lo, hi, by, note))
    return labels


def content_blocks(path: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Each content block of each message of a transcript file, with its record, in file order
    (lines that are not JSON are skipped, as the replay skips them)."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            message = record.get("message") if isinstance(record, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, list):
                continue
            for block in content:
                if isinstance(block, dict):
                    yield record, block


def tool_use_indexes(path: Path) -> dict[str, int]:
    """Each `tool_use` block's id and its index among the file's blocks, in file order."""
    indexes: dict[str, int] = {}
    for _, block in content_blocks(path):
        if block.get("type") == "tool_use":
            indexes.setdefault(str(block.get("id")), len(indexes))
    return indexes


def _detector(kind: str, text: str) -> str:
    if kind == "nudge":
        return text.removeprefix("[loop-breaker] ").split(":", 1)[0]
    _, _, rest = text.partition(" is looping: ")
    return rest.split(" on ", 1)[0]


def _last_calls(paths: Sequence[Path]) -> dict[tuple[str, int], str]:
    """(session id, event index) -> the tool_use id of the last call up to that event, in the
    order the replay dispatches them (subagent events right after the call that started them)."""
    last: dict[tuple[str, int], str] = {}
    for session in read_transcripts(paths).sessions:
        current = ""
        for index, step in enumerate(session.walk()):
            if type(step.event) is ToolCall:
                current = step.event.tool_use_id
            last[(session.session_id, index)] = current
    return last


def said_in(paths: Sequence[Path]) -> list[Said]:
    """Every nudge and alert loop-breaker gives on a replay of `paths`, at its tool-call index."""
    files = sorted({f for p in paths for f in (sorted(p.glob("*.jsonl")) if p.is_dir() else [p])})
    where: dict[str, tuple[str, int]] = {}
    for file in files:
        for tool_use_id, index in tool_use_indexes(file).items():
            where.setdefault(tool_use_id, (file.name, index))
    report = anyio.run(lambda: replay_paths(files, only=[PLUGIN]))
    last_call = _last_calls(files)
    # A nudge before the session's first call (a Stop blocked at once) is at index -1 of its file.
    first = {session.session_id: (Path(session.path).name, -1) for session in report.sessions}
    said: list[Said] = []
    for action in report.actions:
        kind = NUDGE_KINDS.get(action.kind)
        if action.by != PLUGIN or kind is None:
            continue
        tool_use_id = action.tool_use_id or last_call.get((action.session_id, action.index), "")
        name, index = where.get(tool_use_id) or first.get(action.session_id, ("?", -1))
        said.append(Said(name, index, kind, _detector(kind, action.text), action.text))
    return said


def score(
    labels: Mapping[str, list[Episode]], said: Iterable[Said], replayed: Iterable[str]
) -> Score:
    files = {name: FileScore(name) for name in (*labels, *replayed)}
    for one in said:
        files.setdefault(one.file, FileScore(one.file)).said.append(one)
    for name, scored in files.items():
        episodes = labels.get(name, [])
        for one in scored.said:
            if not any(episode.covers(one.index) for episode in episodes):
                scored.false.append(one)
        for episode in episodes:
            if episode.expect != "loop":
                continue
            nudged = any(
                one.kind == "nudge" and episode.lo <= one.index <= episode.nudge_by
                for one in scored.said
            )
            (scored.caught if nudged else scored.missed).append(episode)
    return Score(files)


def judge(labels_path: Path, corpus: Path | None = None) -> Score:
    labels = read_labels(labels_path)
    folder = corpus if corpus is not None else labels_path.parent
    replayed = sorted(folder.glob("*.jsonl"))
    return score(labels, said_in(replayed), [file.name for file in replayed])


def main(argv: Sequence[str] | None = None, *, default_labels: Path | None = None) -> int:
    """The command line; `default_labels` is the LABELS file used when none is given."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("labels", nargs=None if default_labels is None else "?", type=Path)
    parser.add_argument("--corpus", type=Path, help="the sessions' folder (default: beside LABELS)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every nudge")
    parser.add_argument("--strict", action="store_true", help="exit 1 on a miss or a false nudge")
    parser.add_argument("--json", action="store_true", help="print the score as JSON")
    args = parser.parse_args(argv)
    if args.labels is None:
        args.labels = default_labels
    if not args.labels.is_file():
        print(f"judge: no LABELS file at {args.labels}", file=sys.stderr)
        return 2
    result = judge(args.labels, args.corpus)
    if args.json:
        print(json.dumps(_as_json(result), indent=1))
    for name, scored in sorted(result.files.items()):
        marks = [f"caught {e.lo}..{e.hi}" for e in scored.caught]
        marks += [f"MISSED {e.kind} {e.lo}..{e.hi}" for e in scored.missed]
        marks += [f"FALSE {s.kind} {s.detector} @{s.index}" for s in scored.false]
        print(f"{name}: {', '.join(marks) or 'ok'}")
        if args.verbose:
            for one in scored.said:
                print(f"    @{one.index} {one.kind} {one.text[:160]}")
    print(result.line())
    failed = result.caught < result.loops or bool(result.false_nudges)
    return 1 if args.strict and failed else 0


def _as_json(result: Score) -> dict[str, Any]:
    return {
        "caught": result.caught,
        "loops": result.loops,
        "false_nudges": len(result.false_nudges),
        "files": {
            name: {
                "said": [[s.index, s.kind, s.detector] for s in f.said],
                "missed": [[e.lo, e.hi] for e in f.missed],
                "false": [[s.index, s.kind, s.detector] for s in f.false],
            }
            for name, f in result.files.items()
        },
    }


if __name__ == "__main__":
    sys.exit(main())
