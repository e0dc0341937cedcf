"""The `hookchain` command line as a person runs it: a real process, real entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HOOKCHAIN = [sys.executable, "-c", "from framework.cli.app import main; main()"]

DEMO_PLUGIN = """
from framework import PluginInfo, ToolResult, hookimpl

plugin = PluginInfo(name="demo-guard", contract=">=1,<2", description="denies rm")


@hookimpl
def register(on, options):
    async def deny_rm(engine, event, call_next):
        if event.input.get("command", "").startswith("rm "):
            return ToolResult.denied("demo-guard refuses rm", by="demo-guard")
        return await call_next(event)

    on("tool.call", deny_rm, match={"tool": "Bash"})
"""

BROKEN_PLUGIN = "import missing_dependency_of_demo\n"


def install_fake_distribution(root: Path, name: str, module: str, source: str) -> None:
    """A module plus a .dist-info folder: importlib.metadata sees it as an installed plugin."""
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    info = root / f"{module}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n", encoding="utf-8"
    )
    entry = module.replace("_", "-")
    (info / "entry_points.txt").write_text(
        f"[hookchain.plugins]\n{entry} = {module}\n", encoding="utf-8"
    )


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    install_fake_distribution(tmp_path, "hookchain-demo-guard", "demo_guard", DEMO_PLUGIN)
    install_fake_distribution(tmp_path, "hookchain-demo-broken", "demo_broken", BROKEN_PLUGIN)
    (tmp_path / "hookchain.toml").write_text("[hookchain]\n", encoding="utf-8")
    return tmp_path


def run(
    args: list[str], path: Path, stdin: str | None = None, plugins: str = "demo-guard"
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(path),
        "HOOKCHAIN_PLUGINS": plugins,
        "HOOKCHAIN_DATA_DIR": str(path / "data"),
        "HOOKCHAIN_CONFIG": str(path / "hookchain.toml"),
    }
    return subprocess.run(
        [*HOOKCHAIN, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_version(plugin_path: Path) -> None:
    done = run(["--version"], plugin_path)
    assert done.returncode == 0
    assert "contract 1.1" in done.stdout


def test_plugins_json_lists_both_and_reports_the_broken_one_by_name(plugin_path: Path) -> None:
    done = run(["plugins", "--json"], plugin_path, plugins="demo-guard,demo-broken")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    by_name = {entry["name"]: entry for entry in report["plugins"]}
    assert by_name["demo-guard"]["status"] == "loaded"
    assert by_name["demo-guard"]["distribution"] == "hookchain-demo-guard"
    assert by_name["demo-guard"]["version"] == "1.2.3"
    assert by_name["demo-broken"]["status"] == "failed"
    assert "missing_dependency_of_demo" in by_name["demo-broken"]["error"]
    assert [link["plugin"] for link in report["chains"]["tool.call"]] == ["demo-guard"]


def test_plugins_table_shows_chain_order(plugin_path: Path) -> None:
    done = run(["plugins"], plugin_path, plugins="demo-guard,demo-broken")
    assert done.returncode == 0, done.stderr
    assert "demo-guard" in done.stdout
    # The plugin that did not load is in the listing with why, not only in a log line.
    assert "not loaded" in done.stdout and "missing_dependency_of_demo" in done.stdout
    assert "tool.call" in done.stdout and "terminal" in done.stdout


def test_try_prints_result_and_provenance(plugin_path: Path) -> None:
    payload = json.dumps({"tool_use_id": "t1", "tool": "Bash", "input": {"command": "rm -rf /"}})
    done = run(["try", "tool.call", "--payload", payload], plugin_path)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["result"]["denial"] == {"reason": "demo-guard refuses rm", "by": "demo-guard"}
    assert shown["provenance"] == [
        {"by": "demo-guard", "kind": "deny", "text": "demo-guard refuses rm", "event": "tool.call"}
    ]


def test_try_reads_json_lines_and_answers_one_line_each(plugin_path: Path) -> None:
    lines = textwrap.dedent(
        """\
        {"tool_use_id": "a", "tool": "Bash", "input": {"command": "ls"}}
        {"tool_use_id": "b", "tool": "Bash", "input": {"command": "rm x"}}
        """
    )
    done = run(["try", "tool.call"], plugin_path, stdin=lines)
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["result"]["denial"] is None for r in results] == [True, False]


def test_try_refuses_bad_input_clearly(plugin_path: Path) -> None:
    done = run(["try", "tool.call", "--payload", "{not json"], plugin_path)
    assert done.returncode == 2
    assert "input 1" in done.stderr
    unknown = run(["try", "tool.run", "--payload", "{}"], plugin_path)
    assert unknown.returncode == 2
    assert "unknown event 'tool.run'" in unknown.stderr
    missing = run(["try", "tool.call", "--payload", '{"tool": "Bash"}'], plugin_path)
    assert missing.returncode == 2
    assert "tool_use_id" in missing.stderr


def test_try_refuses_to_run_without_a_plugin_that_failed_to_load(plugin_path: Path) -> None:
    payload = json.dumps({"tool_use_id": "t1", "tool": "Bash", "input": {"command": "ls"}})
    done = run(
        ["try", "tool.call", "--payload", payload], plugin_path, plugins="demo-guard,demo-broken"
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "demo-broken" in done.stderr and "missing_dependency_of_demo" in done.stderr
    assert "HOOKCHAIN_DISABLE_PLUGINS=demo-broken" in done.stderr.splitlines()[-1]
    assert "Traceback" not in done.stderr


def test_try_streams_turn_steps(plugin_path: Path) -> None:
    done = run(["try", "turn.step", "--payload", '{"turn_id": "u1"}'], plugin_path)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["result"][-1]["kind"] == "stop"


def test_a_missing_config_file_named_explicitly_is_refused(plugin_path: Path) -> None:
    env = {**os.environ, "HOOKCHAIN_CONFIG": str(plugin_path / "absent.toml")}
    done = subprocess.run(
        [*HOOKCHAIN, "plugins"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "absent.toml" in done.stderr
