"""The plugin examples of README.md and docs/contract.md pass `mypy --strict` as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mypy_strict(cwd: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    """A plugin author's bare `mypy --strict` (run in `cwd`, not under the repo's settings)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(cwd / ".mypy-cache"),
            *targets,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def plugin_example(markdown: Path) -> str:
    """The first python block of the page that declares a `register` hook."""
    blocks = re.findall(r"```python\n(.*?)```", markdown.read_text(encoding="utf-8"), re.DOTALL)
    examples = [block for block in blocks if "@hookimpl" in block and "def register(" in block]
    assert examples, f"{markdown.name} has no plugin example"
    return examples[0]


def test_the_plugin_examples_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for page in (ROOT / "README.md", ROOT / "docs" / "contract.md"):
        target = tmp_path / f"example_{page.stem.lower()}.py"
        target.write_text(plugin_example(page), encoding="utf-8")
        files.append(str(target))
    done = mypy_strict(tmp_path, *files)
    assert done.returncode == 0, done.stdout + done.stderr


def test_on_rejects_a_handler_that_does_not_take_the_engine_port(tmp_path: Path) -> None:
    # `On` and `Handler` check what a plugin attaches: a handler typed for something else fails.
    source = plugin_example(ROOT / "README.md").replace("engine: EnginePort", "engine: str")
    assert "engine: str" in source
    target = tmp_path / "wrong_engine.py"
    target.write_text(source, encoding="utf-8")
    done = mypy_strict(tmp_path, str(target))
    assert done.returncode == 1, done.stdout
    assert '"on"' in done.stdout or "Handler" in done.stdout, done.stdout


def test_a_scaffolded_plugin_passes_mypy_strict(tmp_path: Path) -> None:
    from framework._scaffold import scaffold

    root = scaffold("tool-reminder", tmp_path)
    done = mypy_strict(root, "-p", "tool_reminder")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_architecture_page_maps_every_module_of_the_parts() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    parts = ("core", "stores", "claude_code", "replay", "cli")
    modules = [
        f"{part}/{path.name}"
        for part in parts
        for path in sorted((ROOT / "framework" / part).glob("*.py"))
        if path.name != "__init__.py"
    ]
    missing = [
        m for m in modules if not re.search(rf"^\s+{re.escape(m.split('/')[1])}\s", text, re.M)
    ]
    assert missing == [], "docs/architecture.md does not list these modules"


PORT_CHECK = """
from framework import EnginePort, Host
from framework.testing import FakeEngine


def host_engine(host: Host) -> EnginePort:
    return host.engine("p", "s")


fake: EnginePort = FakeEngine("p")


class Drifted(FakeEngine):
    @property
    def host_files(self) -> list[str]:  # type: ignore[override]
        return []


drifted: EnginePort = Drifted("p")
"""


def test_mypy_holds_the_engine_and_the_fake_to_the_port(tmp_path: Path) -> None:
    target = tmp_path / "port_check.py"
    target.write_text(PORT_CHECK, encoding="utf-8")
    done = mypy_strict(tmp_path, str(target))
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    # Only the drifted fake is refused: the host's engine and the kit's fake are ports.
    assert len(errors) == 1, done.stdout
    assert "drifted: EnginePort" in PORT_CHECK.splitlines()[18]
    assert "port_check.py:19:" in errors[0]
    assert '"Drifted"' in errors[0] and '"EnginePort"' in errors[0]


# -- every python block of the README and the docs ------------------------------------------------

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAMED = re.compile(r"\A# ([\w/]+\.py)\n")
"""A block whose first line names a file (`# tests/test_x.py`) is that file, whole."""


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)


def named_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for page in PAGES:
        for block in python_blocks(page):
            found = NAMED.match(block)
            if found:
                assert found.group(1) not in files, f"two blocks are {found.group(1)}"
                files[found.group(1)] = block
    return files


def test_every_python_block_of_the_docs_is_python() -> None:
    import ast

    for page in PAGES:
        for number, block in enumerate(python_blocks(page), start=1):
            try:
                compile(
                    block, f"{page.name} block {number}", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                )
            except SyntaxError as error:
                raise AssertionError(f"{page.name} block {number}: {error}") from None


CONFTEST = """
import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
"""


def test_the_docs_plugins_and_their_tests_run_as_written(tmp_path: Path) -> None:
    # The modules and tests the pages name, written out as a plugin author would, then their
    # pytest run (the conformance one-liner included) and mypy --strict over all of them.
    files = named_files()
    assert {
        "my_plugin/__init__.py",
        "tests/test_my_plugin.py",
        "tests/test_my_plugin_handler.py",
        "tests/test_my_command.py",
        "my_command.py",
    } <= set(files)
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (tmp_path / "tests" / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.search(r"(\d+) passed", done.stdout)
    assert ran and int(ran.group(1)) == 3 + 10, done.stdout  # three tests and the 10 checks
    typed = mypy_strict(
        tmp_path, *(name for name in files if "/" not in name or name.endswith("__init__.py"))
    )
    assert typed.returncode == 0, typed.stdout + typed.stderr


def test_the_readme_plugin_runs_in_a_host(tmp_path: Path) -> None:
    # The README's plugin, loaded from its text by a real host: a failed Bash gets the note.
    import importlib.util

    import anyio

    from framework import Host, ToolCall, ToolResult

    source = tmp_path / "read_first.py"
    source.write_text(plugin_example(ROOT / "README.md"), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("read_first_doc", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    async def failing(event: object) -> ToolResult:
        return ToolResult(output="exit 1", is_error=True)

    async def run() -> ToolResult:
        async with Host(plugins=[module], entry_points=False, store="memory://", config={}) as host:
            outcome = await host.dispatch(ToolCall(tool_use_id="t", tool="Bash"), failing)
            assert isinstance(outcome.result, ToolResult)
            return outcome.result

    result = anyio.run(run)
    assert [(n.by, n.text) for n in result.notes] == [
        ("read-first", "Read the whole error before you retry.")
    ]
