"""The shared corpus's Bash commands, read by path beside the clone (never copied)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"
TRANSCRIPTS = SHARED / "transcripts"
LABELLED = SHARED / "real-labelled"


def tool_calls(paths: list[Path], needle: str = '"tool_use"') -> list[tuple[str, dict[str, Any]]]:
    """Every tool call (name, input) of the transcripts at `paths`, in file order; only lines
    holding `needle` are decoded."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if needle not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            message = record.get("message") if isinstance(record, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                name, tool_input = block.get("name"), block.get("input")
                if isinstance(name, str) and isinstance(tool_input, dict):
                    calls.append((name, tool_input))
    return calls


def bash_commands(paths: list[Path]) -> list[str]:
    """Every Bash command of the transcripts at `paths`, in file order."""
    calls = tool_calls(paths, '"Bash"')
    commands = [tool_input.get("command") for name, tool_input in calls if name == "Bash"]
    return [command for command in commands if isinstance(command, str)]
