"""Shared fixtures: the anyio backend, a workspace with symlinks pointing out of it, and the
shared corpus's Bash commands."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The attack suite's table and jail are plain modules beside the tests (importlib mode puts
# no test folder on the path).
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Layout:
    ws: Path
    out: Path
    scratch: Path
    home: Path

    def fill(self, text: str) -> str:
        return text.format(ws=self.ws, out=self.out, scratch=self.scratch, home=self.home)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    ws, out, scratch, home = (tmp_path / name for name in ("ws", "outside", "scratch", "home"))
    for folder in (ws / "sub", ws / ".git" / "hooks", ws / ".claude", out, scratch, home):
        folder.mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (out / "target.txt").write_text("x")
    os.symlink(out, ws / "escape")
    os.symlink(out / "target.txt", ws / "evil.txt")
    os.symlink(out, scratch / "planted")
    os.symlink(ws / "sub", ws / "inner")
    return Layout(ws=ws, out=out, scratch=scratch, home=home)


CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "transcripts"


@pytest.fixture(scope="session")
def corpus_bash_commands() -> list[str]:
    """Every Bash command of the shared transcripts, in file order."""
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing: expected it at {CORPUS} (beside the clone)")
    commands: list[str] = []
    for path in sorted(CORPUS.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"Bash"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            content = record.get("message", {}).get("content") if isinstance(record, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("name") == "Bash":
                    command = block.get("input", {}).get("command")
                    if isinstance(command, str):
                        commands.append(command)
    return commands
