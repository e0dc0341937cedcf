"""`hookchain try`: a scripted terminal (--result, --error, in the payload), sample payloads,
--plugins (and the old --plugin), plugins that did not load, and the session's cwd."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from cli_kit import HOOKCHAIN, environment, hookchain

from framework.cli.examples import EXAMPLES
from framework.core.contract import EVENT_TYPES, build_event

NOTES_ERRORS = textwrap.dedent(
    """
    from framework import CommandReply, PluginInfo, hookimpl

    plugin = PluginInfo(name="notes-errors", contract=">=1,<2")


    @hookimpl
    def register(on, options):
        async def note(engine, event, call_next):
            result = await call_next(event)
            if result.is_error:
                return result.with_note(f"saw: {result.output}", by="notes-errors")
            return result

        async def status(engine, event, call_next):
            return CommandReply(text="all fine", by="notes-errors")

        on("tool.call", note)
        on("command.run", status, match={"command": "status"})
    """
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "local"
    folder.mkdir()
    (folder / "notes_errors.py").write_text(NOTES_ERRORS, encoding="utf-8")
    return tmp_path


def run_try(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"HOOKCHAIN_PLUGINS_DIR": str(home / "local"), "HOOKCHAIN_PLUGINS": "notes-errors"}
    return hookchain(["try", *args], home, env, stdin=stdin)


CALL = json.dumps({"tool_use_id": "t1", "tool": "Bash", "input": {"command": "make"}})


def notes(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    return [note["text"] for note in shown["result"]["notes"]]


def test_without_a_script_the_tool_succeeds_and_the_plugin_stays_quiet(home: Path) -> None:
    assert notes(run_try(home, "tool.call", "--payload", CALL)) == []


def test_error_scripts_a_failing_tool(home: Path) -> None:
    done = run_try(home, "tool.call", "--payload", CALL, "--error", "make: *** [all] Error 2")
    assert notes(done) == ["saw: make: *** [all] Error 2"]
    assert json.loads(done.stdout)["result"]["is_error"] is True


def test_result_scripts_the_whole_answer_with_is_error(home: Path) -> None:
    done = run_try(
        home, "tool.call", "--payload", CALL, "--result", '{"output": "x", "is_error": true}'
    )
    assert notes(done) == ["saw: x"]


def test_a_payload_line_may_carry_its_own_result(home: Path) -> None:
    lines = "\n".join(
        [
            json.dumps({"tool_use_id": "a", "tool": "Bash", "output": "boom", "is_error": True}),
            json.dumps({"tool_use_id": "b", "tool": "Bash", "result": {"output": "ok"}}),
        ]
    )
    done = run_try(home, "tool.call", stdin=lines)
    assert done.returncode == 0, done.stderr
    shown = [json.loads(line) for line in done.stdout.splitlines()]
    assert [[n["text"] for n in s["result"]["notes"]] for s in shown] == [["saw: boom"], []]


def test_command_run_is_scripted_by_its_handler(home: Path) -> None:
    done = run_try(home, "command.run", "--payload", '{"command": "status"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == {"text": "all fine", "by": "notes-errors"}


def test_error_is_refused_for_an_event_without_a_tool(home: Path) -> None:
    done = run_try(home, "prompt.submit", "--payload", '{"text": "hi"}', "--error", "x")
    assert done.returncode == 2
    assert "--error is for tool.call" in done.stderr


def test_every_event_has_an_example_that_builds() -> None:
    assert set(EXAMPLES) == set(EVENT_TYPES)
    for name, payload in EXAMPLES.items():
        built = build_event("classic.Notification" if name == "classic" else name, payload)
        assert built.session_id == "s1"


def test_an_example_pipes_into_try(home: Path) -> None:
    env = environment(home, {"HOOKCHAIN_PLUGINS_DIR": str(home / "local")})
    (home / "hookchain.toml").write_text("", encoding="utf-8")
    example = subprocess.run(
        [HOOKCHAIN, "try", "--example", "tool.call"],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=60,
        check=True,
    )
    assert json.loads(example.stdout)["tool"] == "Bash"
    assert example.stdout.count("\n") == 1  # one line in a pipe: JSON lines for try
    done = run_try(home, "tool.call", "--error", "nope", stdin=example.stdout)
    assert notes(done) == ["saw: nope"]


def test_an_unknown_example_names_the_known_events(home: Path) -> None:
    done = run_try(home, "--example", "tool.nope")
    assert done.returncode == 2
    assert "unknown event 'tool.nope'" in done.stderr and "prompt.submit" in done.stderr


def test_plugins_is_the_option_and_plugin_a_hidden_alias(home: Path) -> None:
    env = {"HOOKCHAIN_PLUGINS_DIR": str(home / "local")}
    for flag in ("--plugins", "--plugin"):
        done = hookchain(
            ["try", "tool.call", "--payload", CALL, "--error", "e", flag, "notes-errors"], home, env
        )
        assert notes(done) == ["saw: e"]
    help_text = hookchain(["try", "--help"], home).stdout
    assert "--plugins" in help_text and "--plugin " not in help_text


def test_plugins_takes_a_comma_separated_list(home: Path) -> None:
    env = {"HOOKCHAIN_PLUGINS_DIR": str(home / "local")}
    done = hookchain(
        [
            "try",
            "tool.call",
            "--payload",
            CALL,
            "--error",
            "e",
            "--plugins",
            "notes-errors,write-guard",
        ],
        home,
        env,
    )
    assert notes(done) == ["saw: e"]


def test_the_session_has_the_current_folder_as_its_cwd(tmp_path: Path) -> None:
    # write-guard reads the session's cwd; try gives it the folder it runs in, so there is no
    # warning about a missing one and the workspace is that folder.
    inside = json.dumps(
        {
            "tool_use_id": "t",
            "tool": "Write",
            "input": {"file_path": str(tmp_path / "a.txt"), "content": "x"},
        }
    )
    outside = json.dumps(
        {
            "tool_use_id": "u",
            "tool": "Write",
            "input": {"file_path": "/etc/hookchain-x", "content": "x"},
        }
    )
    done = hookchain(
        ["try", "tool.call", "--plugins", "write-guard"],
        tmp_path,
        stdin=f"{inside}\n{outside}\n",
    )
    assert done.returncode == 0, done.stderr
    assert "no cwd" not in done.stderr
    denials = [json.loads(line)["result"]["denial"] for line in done.stdout.splitlines()]
    assert denials[0] is None and denials[1] is not None
