"""Shared fixtures: the anyio backend, a workspace with symlinks pointing out of it, and the
shared corpus's Bash commands."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The attack suite's table and jail are plain modules beside the tests (importlib mode puts
# no test folder on the path).
sys.path.insert(0, str(Path(__file__).parent))

from wg_corpus import TRANSCRIPTS, bash_commands
from wg_jail import GIT_ENV, Tree, build_template


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


CORPUS = TRANSCRIPTS


@pytest.fixture(scope="session")
def corpus_bash_commands() -> list[str]:
    """Every Bash command of the shared transcripts, in file order."""
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing: expected it at {CORPUS} (beside the clone)")
    return bash_commands(sorted(CORPUS.rglob("*.jsonl")))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The attack suite's throwaway tree, built once per module (see `wg_jail`)."""
    root = tmp_path_factory.mktemp("template") / "t"
    build_template(root)
    return root


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hookchain's data dir in the test's folder: a snapshot writes write-guard's copy there,
    never into the person's."""
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(tmp_path / "hookchain-data"))


@pytest.fixture
def tree(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tree:
    """A fresh copy of the template; hookchain's runtime and data dirs are inside it."""
    made = Tree(root=tmp_path / "t", template=template)
    made.reset()
    monkeypatch.setenv("HOOKCHAIN_RUNTIME_DIR", str(made.root / "run"))
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(made.root / "data"))
    return made


@pytest.fixture
def git_env(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> Tree:
    """`tree`, with the host's git reading the tree's HOME, never the real one."""
    monkeypatch.setenv("HOME", str(tree.root / "home"))
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    return tree


@pytest.fixture
def scratch_env(git_env: Tree, monkeypatch: pytest.MonkeyPatch) -> Tree:
    """`git_env` with TMPDIR in the tree too: every file the host's git makes stays there."""
    monkeypatch.setenv("TMPDIR", str(git_env.root / "tmp"))
    return git_env
