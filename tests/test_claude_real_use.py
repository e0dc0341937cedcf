"""Claude Code as people use it: several projects on one warm host, hosts that hang, die or
cannot start, plugins that raise what they should not, payloads too large. Real client processes
and a real host process throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from claude_e2e_kit import ClaudeSide, claude_side, post, pre

from framework import _launch
from framework.claude_code import daemon as _daemon

pytestmark = pytest.mark.slow


def write(path: str, session: str, tool_use_id: str) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_use_id": tool_use_id,
        "tool_input": {"file_path": path, "content": "x"},
    }


def decision(side: ClaudeSide, payload: dict[str, Any], **env: str) -> str:
    answer = side.hook("PreToolUse", payload, **env)
    assert answer.code == 0, answer.stderr
    specific = answer.answer.get("hookSpecificOutput", {})
    return str(specific.get("permissionDecision", "allow"))


def project(root: Path, toml: str = "") -> Path:
    (root / ".git").mkdir(parents=True)
    if toml:
        (root / "hookchain.toml").write_text(toml)
    return root


WRITE_GUARD = {"HOOKCHAIN_PLUGINS": "write-guard", "HOOKCHAIN_PLUGIN_MODULES": ""}
"""write-guard alone; its default extra roots hold the temp dir, which must not hold projects."""


def guarded_side() -> Any:
    return claude_side(**WRITE_GUARD, TMPDIR="/var/tmp")


def test_two_projects_on_one_host_each_get_their_own_workspace_and_options() -> None:
    with guarded_side() as side:
        extra = side.root / "opt"
        extra.mkdir()
        a = project(side.root / "a", f'[write-guard]\nextra_writable_roots = ["{extra}"]\n')
        b = project(side.root / "b")
        in_a = {"CLAUDE_PROJECT_DIR": str(a)}
        in_b = {"CLAUDE_PROJECT_DIR": str(b)}
        # A starts the host; B's session must not inherit A's workspace nor A's options.
        assert decision(side, write(f"{a}/f", "sa", "t1"), **in_a) == "allow"
        pid = side.host_pid()
        assert decision(side, write(f"{extra}/x", "sa", "t2"), **in_a) == "allow"
        assert decision(side, write(f"{b}/f", "sa", "t3"), **in_a) == "deny"
        assert decision(side, write(f"{b}/f", "sb", "t4"), **in_b) == "allow"
        assert decision(side, write(f"{a}/f", "sb", "t5"), **in_b) == "deny"
        assert decision(side, write(f"{extra}/x", "sb", "t6"), **in_b) == "deny"
        assert side.host_pid() == pid
        status = _daemon.request_control(side.options(), "@status")
        assert status is not None
        configs = {entry["root"]: entry["config"] for entry in status["projects"]}
        assert configs == {str(a): str(a / "hookchain.toml"), str(b): None}
        # Each project's plugins say, in the warm host's status, which route enforces what.
        for entry in status["projects"]:
            line = entry["plugin_status"]["write-guard"]
            assert line.startswith("shell writes: "), line


def test_the_project_comes_from_the_payload_cwd_when_no_project_dir_is_set() -> None:
    with guarded_side() as side:
        a = project(side.root / "a")
        b = project(side.root / "b")
        (b / "sub").mkdir()
        first = {**write(f"{a}/f", "sa", "t1"), "cwd": str(a)}
        assert decision(side, first) == "allow"
        in_b = {**write(f"{b}/f", "sb", "t2"), "cwd": str(b / "sub")}
        assert decision(side, in_b) == "allow"  # B's git root, found from its subfolder
        assert decision(side, {**write(f"{a}/f", "sb", "t3"), "cwd": str(b)}) == "deny"


def test_a_changed_hookchain_toml_applies_from_the_next_event() -> None:
    with guarded_side() as side:
        extra = side.root / "opt"
        extra.mkdir()
        b = project(side.root / "b")
        in_b = {"CLAUDE_PROJECT_DIR": str(b)}
        assert decision(side, write(f"{extra}/x", "sb", "t1"), **in_b) == "deny"
        (b / "hookchain.toml").write_text(f'[write-guard]\nextra_writable_roots = ["{extra}"]\n')
        assert decision(side, write(f"{extra}/x", "sb", "t2"), **in_b) == "allow"
        # A plugin variable of the session counts too.
        env = {**in_b, "WRITE_GUARD_PRESET": "read-only"}
        assert decision(side, write(f"{b}/f", "sb", "t3"), **env) == "deny"
        assert decision(side, write(f"{b}/f", "sb", "t4"), **in_b) == "allow"


def test_a_suspended_call_resumes_in_its_host_after_the_config_changed() -> None:
    with claude_side() as side:
        root = project(side.root / "p")
        env = {"CLAUDE_PROJECT_DIR": str(root)}
        call = pre("ls", "toolu_keep", "s")
        assert side.hook("PreToolUse", call, **env).code == 0
        (root / "hookchain.toml").write_text("[hookchain]\nhandler_budget = 3.0\n")
        done = side.hook("PostToolUse", post(call), **env)
        assert done.answer["hookSpecificOutput"]["additionalContext"] == (
            "[claude-probe] probe saw Bash (ok)"
        )
        assert len(side.probe("tool")) == 1  # resumed once, not replayed in the new host
        status = _daemon.request_control(side.options(), "@status")
        assert status is not None
        assert status["replayed_calls"] == 0


def stopped_host(side: ClaudeSide) -> int:
    assert side.hook("PreToolUse", pre("ls", "t0", "s")).code == 0
    pid = side.host_pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    return pid


def test_a_sigstopped_host_is_answered_within_the_deadline_open_or_closed() -> None:
    with claude_side(HOOKCHAIN_CONNECT_DEADLINE="1") as side:
        pid = stopped_host(side)
        try:
            started = time.monotonic()
            opened = side.hook("PreToolUse", pre("ls", "t1", "s"))
            took = time.monotonic() - started
            assert opened.code == 0
            assert "the host is hung" in opened.stderr
            assert took < 1.8, took
            started = time.monotonic()
            closed = side.hook("PreToolUse", pre("ls", "t2", "s"), HOOKCHAIN_UNREACHABLE="closed")
            assert closed.code == 2
            assert "HOOKCHAIN_UNREACHABLE=closed" in closed.stderr
            assert time.monotonic() - started < 1.8
        finally:
            os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize("raised", ["SystemExit", "KeyboardInterrupt", "CancelledError"])
def test_a_plugin_raising_any_exception_class_leaves_the_host_serving(raised: str) -> None:
    with claude_side() as side:
        assert side.hook("PreToolUse", pre("ls", "t0", "s")).code == 0
        pid = side.host_pid()
        for event, payload in [
            ("PreToolUse", pre(f"RAISE {raised}", "t1", "s")),
            ("UserPromptSubmit", prompt(f"RAISE {raised}")),
        ]:
            raised_answer = side.hook(event, payload)
            assert raised_answer.code == 0
            assert "hook failed" in raised_answer.stderr or raised_answer.stderr == ""
        assert side.host_pid() == pid
        assert len(side.probe("raise")) == 2  # each dispatched once: no resend to a new host
        done = side.hook("PostToolUse", post(pre("ls", "t0", "s")))
        assert "probe saw Bash" in done.stdout


def prompt(text: str) -> dict[str, Any]:
    return {"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": text}


def test_a_host_killed_mid_request_is_not_sent_the_payload_again() -> None:
    with claude_side(HOOKCHAIN_CONNECT_DEADLINE="5") as side:
        assert side.hook("PreToolUse", pre("ls", "t0", "s")).code == 0
        pid = side.host_pid()
        result = side.hook("PreToolUse", pre("KILLHOST", "t1", "s"))
        assert result.code == 0
        assert "the host ended while answering" in result.stderr
        assert side.wait_gone(pid or 0)
        assert len(side.probe("killhost")) == 1
        assert side.host_pid() is None  # nothing was resent, so no new host either


def test_a_request_id_seen_twice_is_dispatched_once() -> None:
    with claude_side() as side:
        assert side.hook("Notification", {"session_id": "s", "hook_event_name": "Notification"})
        stamp = _daemon.host_stamp()
        context = b"\0".join([b"/", *(f"{k}={v}".encode() for k, v in side.env.items())])
        payload = json.dumps({"session_id": "s", "hook_event_name": "Notification"}).encode()
        request = (
            f"{_launch.PROTOCOL} {stamp} Notification\nsame-id {len(context)}\n".encode()
            + context
            + payload
        )
        answers = [exchange(side, request) for _ in range(2)]
        assert answers[0] == answers[1]
        assert answers[0].startswith(_launch.ACCEPTED)
        assert len(side.probe("classic")) == 2  # the warm-up call and one of the two
        status = _daemon.request_control(side.options(), "@status")
        assert status is not None
        assert status["retried_requests"] == 1


def exchange(side: ClaudeSide, request: bytes) -> bytes:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(side.runtime / _launch.SOCKET_NAME))
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        return b"".join(iter(lambda: sock.recv(65536), b""))


def hookchain(side: ClaudeSide, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from framework.cli.app import main; main()", *args]
    return subprocess.run(command, env=side.env, capture_output=True, text=True, timeout=60)


def test_a_runtime_dir_open_to_others_is_named_with_its_fix_and_starts_are_rate_limited() -> None:
    with claude_side() as side:
        side.runtime.mkdir(mode=0o700)
        side.runtime.chmod(0o755)
        started = time.monotonic()
        first = side.hook("PreToolUse", pre("ls", "t1", "s"))
        assert first.code == 0
        assert "mode 755" in first.stderr
        assert f"chmod 700 {side.runtime}" in first.stderr
        assert time.monotonic() - started < 15
        started = time.monotonic()
        again = side.hook("PreToolUse", pre("ls", "t2", "s"))
        assert "mode 755" in again.stderr
        assert "last start failed" in again.stderr  # no second host was started
        assert time.monotonic() - started < 1.0
        shown = hookchain(side, "status")
        assert shown.returncode == 1
        assert "mode 755" in shown.stdout and "chmod 700" in shown.stdout


@pytest.mark.parametrize("store", ["redis://127.0.0.1:1/0", "corrupt-sqlite"])
def test_a_store_that_cannot_open_is_named_in_the_answer_and_in_status(store: str) -> None:
    with claude_side() as side:
        if store == "corrupt-sqlite":
            corrupt = side.root / "store.sqlite3"
            corrupt.write_bytes(b"this is not a database" * 100)
            store = f"sqlite:///{corrupt}"
        env = {"HOOKCHAIN_STORE": store}
        started = time.monotonic()
        answer = side.hook("PreToolUse", pre("ls", "t1", "s"), **env)
        assert answer.code == 0
        assert store.split("://")[0] in answer.stderr
        assert "HOOKCHAIN_STORE" in answer.stderr
        assert time.monotonic() - started < 10
        closed = side.hook(
            "PreToolUse", pre("ls", "t2", "s"), HOOKCHAIN_UNREACHABLE="closed", **env
        )
        assert closed.code == 2
        shown = hookchain(side, "status")
        assert store.split("://")[0] in shown.stdout
        assert "HOOKCHAIN_STORE" in shown.stdout


def test_a_payload_over_the_limit_is_answered_too_large_under_the_fail_mode() -> None:
    with claude_side() as side:
        big = json.dumps({**pre("ls", "t1", "s"), "pad": "x" * (8 * 1024 * 1024)})
        started = time.monotonic()
        opened = side.hook("PreToolUse", big.encode())
        assert opened.code == 0
        assert "hook payload too large" in opened.stderr
        assert time.monotonic() - started < 5
        closed = side.hook("PreToolUse", big.encode(), HOOKCHAIN_UNREACHABLE="closed")
        assert closed.code == 2
        assert "too large" in closed.stderr


def test_no_daemon_writes_only_the_answer_to_stdout() -> None:
    with guarded_side() as side:
        # No cwd in the payload: write-guard logs a warning while it answers.
        done = side.no_daemon("PreToolUse", write("/etc/x", "s", "t"))
        assert done.code == 0
        lines = done.stdout.splitlines()
        assert len(lines) == 1, done.stdout
        assert json.loads(lines[0])["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_switching_to_http_while_a_host_runs_serves_http_at_once() -> None:
    from test_claude_http import post_hook

    from framework.claude_code import http as _http

    with claude_side() as side:
        root = project(side.root / "p")
        assert side.hook("SessionStart", {**START, "cwd": str(root)}).code == 0
        pid = side.host_pid()
        cli = [sys.executable, "-c", "from framework.cli.app import main; main()"]
        done = subprocess.run(
            [*cli, "install", "--transport", "http"],
            env=side.env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "running host: http hooks served" in done.stdout
        credentials = _http.load_credentials(Path(side.env["HOOKCHAIN_DATA_DIR"]))
        assert credentials is not None
        status, answer = post_hook(credentials.port, pre("rm -rf /", "t1", "s"), credentials.token)
        assert status == 200
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert side.host_pid() == pid


START = {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}


def test_the_runtime_dir_is_a_protected_host_file() -> None:
    with guarded_side() as side:
        root = project(side.root / "p")
        # The runtime dir inside the workspace: only its protection can refuse these.
        side.env["HOOKCHAIN_RUNTIME_DIR"] = str(root / "rt")
        env = {"CLAUDE_PROJECT_DIR": str(root)}
        assert decision(side, write(f"{root}/ok", "s", "t0"), **env) == "allow"
        assert decision(side, write(f"{root}/rt/host.sock", "s", "t1"), **env) == "deny"
        for number, command in enumerate([f"chmod 755 {root}/rt", f"rm -rf {root}/rt"]):
            bash = pre(command, f"b{number}", "s")
            assert decision(side, bash, **env) == "deny", command


def test_a_plugin_that_did_not_load_is_named_once_per_session_and_in_status() -> None:
    # A guard that is missing must not go unnoticed: the first answer of each session says so
    # on stderr (Claude Code's debug view and the transcript show it), and so does status.
    with claude_side() as side:
        env = {"HOOKCHAIN_PLUGINS": "claude-probe,nosuch-guard"}
        first = side.hook("PreToolUse", pre("ls", "t1", "s1"), **env)
        assert first.code == 0
        assert "plugin nosuch-guard not loaded" in first.stderr, first.stderr
        side.hook("PostToolUse", post(pre("ls", "t1", "s1")), **env)
        again = side.hook("PreToolUse", pre("ls", "t2", "s1"), **env)
        assert "not loaded" not in again.stderr
        other = side.hook("PreToolUse", pre("ls", "t3", "s2"), **env)
        assert "plugin nosuch-guard not loaded" in other.stderr
        shown = hookchain(side, "status")
        assert "not loaded   nosuch-guard" in shown.stdout, shown.stdout
