"""The shared corpus's Bash commands, read by path beside the clone (never copied)."""

from __future__ import annotations

import json
from pathlib import Path

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"
TRANSCRIPTS = SHARED / "transcripts"
LABELLED = SHARED / "real-labelled"


def bash_commands(paths: list[Path]) -> list[str]:
    """Every Bash command of the transcripts at `paths`, in file order."""
    commands: list[str] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"Bash"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            message = record.get("message") if isinstance(record, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("name") == "Bash":
                    command = block.get("input", {}).get("command")
                    if isinstance(command, str):
                        commands.append(command)
    return commands
