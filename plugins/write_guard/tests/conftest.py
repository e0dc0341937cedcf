"""Shared fixtures: the anyio backend and a workspace with symlinks pointing out of it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest


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
