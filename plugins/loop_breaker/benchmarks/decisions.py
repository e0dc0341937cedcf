"""Every decision loop-breaker takes on every shared session, as one JSON document: run it on two
trees and compare the outputs to show a change kept the plugin's behaviour.

    python plugins/loop_breaker/benchmarks/decisions.py > after.json
    (cd OTHER_TREE && .venv/bin/python plugins/loop_breaker/benchmarks/decisions.py) > before.json
    cmp before.json after.json

Two views of each session file of `../shared/corpus/transcripts/` and `real-labelled/`:

* `host`: the replay through the host with loop-breaker alone (`replay_paths`): each action the
  plugin took (a note, a toast, a transcript line, an appended message, a refusal) with its
  session, event index, call and text;
* `core`: each tool call of the file fed to the core directly (with auto-stop on, so a stop is
  decided too), the decisions of each call in order, and the core's whole state at the end
  (`codec.dump`: every record's action key, fingerprint, error signature and class, label,
  snippet, file states and the policy's ladder).

The last line printed to stderr is the number of files, actions and core decisions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from framework import replay_paths
from loop_breaker.core import MAIN_LOOP, CoreConfig, LoopBreakerCore, Observation
from loop_breaker.core.codec import dump
from loop_breaker.core.normalize import NEVER_COUNTED_TOOLS, classify_outcome
from loop_breaker.core.result_text import text_and_source
from loop_breaker.judge import content_blocks

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"
FOLDERS = ("transcripts", "real-labelled")


def session_files() -> list[Path]:
    files = [file for folder in FOLDERS for file in sorted((CORPUS / folder).glob("*.jsonl"))]
    if not files:
        raise SystemExit(f"decisions: no shared sessions under {CORPUS}")
    return files


def host_actions(files: list[Path]) -> list[list[Any]]:
    report = anyio.run(lambda: replay_paths(files, only=["loop-breaker"]))
    return [
        [action.session_id, action.index, action.tool_use_id, action.kind, action.text]
        for action in report.actions
        if action.by == "loop-breaker"
    ]


def core_decisions(path: Path) -> dict[str, Any]:
    core = LoopBreakerCore(CoreConfig(auto_stop=True))
    uses: dict[str, tuple[str, dict[str, Any]]] = {}
    said: list[list[Any]] = []
    for index, (record, block) in enumerate(content_blocks(path)):
        loop_id = str(record.get("agentId") or MAIN_LOOP)
        if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
            tool, tool_input = str(block.get("name")), block["input"]
            uses[str(block.get("id"))] = (tool, tool_input)
            stop = core.check_stop(loop_id, tool, tool_input, index)
            if stop is not None:
                said.append([index, stop.kind, stop.detector, stop.signature, stop.text])
        elif block.get("type") == "tool_result":
            tool, tool_input = uses.get(str(block.get("tool_use_id")), ("Unknown", {}))
            if tool in NEVER_COUNTED_TOOLS:
                continue
            is_error = block.get("is_error") is True
            structured = record.get("toolUseResult")
            output = structured if structured is not None else block.get("content")
            text, source, chars = text_and_source(tool, output, is_error=is_error)
            observation = Observation(
                str(block.get("tool_use_id")),
                loop_id,
                tool,
                tool_input,
                classify_outcome(is_error, False, text),
                text,
                index,
                source,
                chars,
            )
            for decision in core.observe(observation):
                said.append(
                    [index, decision.kind, decision.detector, decision.signature, decision.text]
                )
    return {"decisions": said, "state": dump(core)}


def main() -> int:
    files = session_files()
    actions = host_actions(files)
    core = {f"{file.parent.name}/{file.name}": core_decisions(file) for file in files}
    json.dump({"host": actions, "core": core}, sys.stdout, sort_keys=True, indent=1)
    sys.stdout.write("\n")
    decided = sum(len(entry["decisions"]) for entry in core.values())
    print(f"files={len(files)} actions={len(actions)} core_decisions={decided}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
