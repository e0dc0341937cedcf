"""The pytest plugin from a plugin author's test folder: fixtures and --hookchain-conformance."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

BROKEN = Path(__file__).parent / "broken_plugins"

AUTHOR_TEST = """
from __future__ import annotations

import pytest

import well_behaved
from framework import ToolResult
from framework.testing import command_run, dispatch, provenance, returns, session_start, tool_call


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_note_on_failure(hookchain_host, hookchain_clock) -> None:
    hookchain_clock.advance(1_000)
    async with hookchain_host(well_behaved) as host:
        failed = ToolResult(output="boom", is_error=True)
        outcome = await dispatch(host, tool_call("Bash"), returns(failed))
    assert outcome.result.notes[0].by == "well-behaved"


async def _handler_runs_on_fake_engine(fake_engine) -> None:
    engine = fake_engine("well-behaved")
    engine.ui.toast("x")
    assert engine.recorder.of("toast") == ["x"]


@pytest.mark.anyio
async def test_host_is_sandboxed_and_logs_are_recorded(
    hookchain_host, hookchain_logs, tmp_path
) -> None:
    async with hookchain_host(well_behaved) as host:
        outcome = await dispatch(host, session_start())
        await dispatch(host, command_run("well-behaved"))
    [status] = provenance(outcome, kind="status")
    assert str(tmp_path / "hookchain-sandbox" / "well-behaved") in status.text
    logged = [(e["plugin"], e["log_level"], e["event"]) for e in hookchain_logs if "plugin" in e]
    assert logged == [("well-behaved", "info", "answered well-behaved")]


def test_fake_engine(fake_engine) -> None:
    import anyio

    anyio.run(_handler_runs_on_fake_engine, fake_engine)
"""


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The plugin arrives the way an author gets it: through hookchain's pytest11 entry point.
    env = {**os.environ, "PYTHONPATH": str(folder)}
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    plugins = ["-p", "no:cacheprovider"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, "-q", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_fixtures_work_in_an_authors_test_folder(tmp_path: Path) -> None:
    shutil.copy(BROKEN / "well_behaved.py", tmp_path / "well_behaved.py")
    (tmp_path / "test_author.py").write_text(AUTHOR_TEST, encoding="utf-8")
    run = _pytest(tmp_path, "test_author.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout


def test_conformance_flag_adds_one_test_per_check(tmp_path: Path) -> None:
    shutil.copy(BROKEN / "reads_files_directly.py", tmp_path / "reads_files_directly.py")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nhookchain_plugins = reads_files_directly\n", encoding="utf-8"
    )
    run = _pytest(tmp_path, "--hookchain-conformance", "-rf")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 9 passed" in run.stdout
    assert "hookchain[reads_files_directly][no-direct-io]" in run.stdout


def test_without_the_flag_nothing_is_added(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nhookchain_plugins = reads_files_directly\n", encoding="utf-8"
    )
    run = _pytest(tmp_path)
    assert run.returncode == 5, run.stdout + run.stderr  # pytest's "no tests collected"
