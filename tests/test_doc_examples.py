"""The plugin examples of README.md and docs/contract.md pass `mypy --strict` as written."""

from __future__ import annotations

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
