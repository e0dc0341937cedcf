"""End to end as Claude Code does it: a client process per hook call, in parallel, real host."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import claude_probe_plugin as probe
import pytest
from claude_e2e_kit import CLIENT, claude_side, payload_lines, post, pre

from framework import Host, _launch
from framework.claude_code import daemon as _daemon

pytestmark = pytest.mark.slow


def test_parallel_clients_across_two_sessions_share_one_warm_host() -> None:
    with claude_side() as side:
        calls = [pre(f"cmd {i}", f"toolu_{s}{i}", f"session-{s}") for s in "ab" for i in range(4)]
        started = [side.start("PreToolUse", call) for call in calls]
        answers = [side.finish(process) for process in started]
        assert [(a.code, a.stdout, a.stderr) for a in answers] == [(0, "", "")] * len(calls)
        pid = side.host_pid()
        assert pid is not None
        status = _daemon.request_control(side.options(), "@status")
        assert status is not None
        assert status["suspended_calls"] == len(calls)
        assert status["sessions"] == 2
        results = [side.finish(side.start("PostToolUse", post(call))) for call in calls]
        for result in results:
            assert result.code == 0
            assert result.answer["hookSpecificOutput"]["additionalContext"] == (
                "[claude-probe] probe saw Bash (ok)"
            )
        seen = {(entry[1], entry[2]) for entry in side.probe("tool")}
        assert seen == {(call["session_id"], call["tool_use_id"]) for call in calls}
        assert side.host_pid() == pid


def test_a_denial_comes_back_as_deny_json_with_exit_0() -> None:
    with claude_side() as side:
        result = side.hook("PreToolUse", pre("rm -rf /", "toolu_d", "s"))
        assert result.code == 0
        specific = result.answer["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny"
        assert "destructive command" in specific["permissionDecisionReason"]


def test_malformed_stdin_is_reported_and_the_host_goes_on() -> None:
    with claude_side() as side:
        bad = side.hook("PreToolUse", b"{this is not json")
        assert bad.code == 0
        assert bad.stdout == ""
        assert bad.stderr.startswith("hookchain: ignored this hook call: hook payload is not JSON")
        assert bad.stderr.count("\n") == 1
        good = side.hook("PreToolUse", pre("rm -rf x", "toolu_g", "s"))
        assert good.answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_sigkill_mid_session_fails_open_then_recovers_by_replaying() -> None:
    with claude_side() as side:
        call = pre("make test", "toolu_k", "session-k")
        assert side.hook("PreToolUse", call).code == 0
        pid = side.host_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert side.wait_gone(pid)
        unreachable = side.hook("PostToolUse", post(call), HOOKCHAIN_CONNECT_DEADLINE="0")
        assert unreachable.code == 0
        assert unreachable.stdout == ""
        assert unreachable.stderr.startswith("hookchain: host unreachable")
        assert unreachable.stderr.count("\n") == 1
        recovered = side.hook("PostToolUse", post(call))
        assert recovered.code == 0
        assert "probe saw Bash (ok)" in recovered.answer["hookSpecificOutput"]["additionalContext"]
        new_pid = side.host_pid()
        assert new_pid is not None
        assert new_pid != pid
        status = _daemon.request_control(side.options(), "@status")
        assert status is not None
        assert status["replayed_calls"] == 1


def test_unreachable_closed_blocks_pre_tool_use_only(tmp_path: Path) -> None:
    # A runtime dir open to others makes the host refuse to start, so nothing ever answers.
    shared = tmp_path / "open"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with claude_side(HOOKCHAIN_RUNTIME_DIR=str(shared), HOOKCHAIN_CONNECT_DEADLINE="0.5") as side:
        blocked = side.hook("PreToolUse", pre("ls", "t", "s"), HOOKCHAIN_UNREACHABLE="closed")
        assert blocked.code == 2
        assert "HOOKCHAIN_UNREACHABLE=closed" in blocked.stderr
        passed = side.hook("PostToolUse", post(pre("ls", "t", "s")), HOOKCHAIN_UNREACHABLE="closed")
        assert passed.code == 0
        opened = side.hook("PreToolUse", pre("ls", "t", "s"))
        assert opened.code == 0
        assert "host unreachable" in opened.stderr
        assert not (shared / "host.sock").exists()


def test_a_client_of_another_version_restarts_the_host() -> None:
    with claude_side() as side:
        assert side.hook("PreToolUse", pre("rm -rf a", "t1", "s")).code == 0
        old = side.host_pid()
        assert old is not None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(side.runtime / _launch.SOCKET_NAME))
            sock.sendall(b"HC1 0 0-0 PreToolUse\n{}")
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(100) == b"R\n"
        assert side.wait_gone(old)
        again = side.hook("PreToolUse", pre("rm -rf b", "t2", "s"))
        assert again.answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert side.host_pid() not in (None, old)


def test_the_runtime_dir_and_socket_are_private() -> None:
    with claude_side() as side:
        side.hook("Notification", {"session_id": "s", "hook_event_name": "Notification"})
        assert side.runtime.stat().st_mode & 0o777 == 0o700
        assert (side.runtime / _launch.SOCKET_NAME).stat().st_mode & 0o777 == 0o600
        assert (side.runtime / _daemon.LOG_NAME).stat().st_mode & 0o777 == 0o600
        assert side.probe("classic") == [["classic", "Notification"]]


def test_peer_uid_is_read_from_the_socket() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert _daemon.peer_uid(left) == os.getuid()


def test_status_and_stop_through_the_cli() -> None:
    with claude_side() as side:
        command = [sys.executable, "-c", "from framework.cli.app import main; main()"]
        absent = subprocess.run([*command, "status", "--json"], env=side.env, capture_output=True)
        assert absent.returncode == 1
        assert json.loads(absent.stdout)["pid"] is None
        side.hook("Notification", {"session_id": "s", "hook_event_name": "Notification"})
        shown = subprocess.run([*command, "status", "--json"], env=side.env, capture_output=True)
        assert shown.returncode == 0
        status = json.loads(shown.stdout)
        assert status["pid"] == side.host_pid()
        assert status["events_served"] == 1
        assert status["plugins"][0]["name"] == "claude-probe"
        stopped = subprocess.run([*command, "serve", "--stop"], env=side.env, capture_output=True)
        assert b"host stopped" in stopped.stdout
        assert side.wait_gone(status["pid"])


def test_an_idle_host_exits_on_its_own() -> None:
    with claude_side(HOOKCHAIN_IDLE_EXIT="0.5") as side:
        side.hook("Notification", {"session_id": "s", "hook_event_name": "Notification"})
        pid = side.lock_pid()
        assert pid is not None
        assert side.wait_gone(pid, timeout=15)
        assert not (side.runtime / _launch.SOCKET_NAME).exists()


def test_no_daemon_runs_the_chain_in_the_client_process() -> None:
    with claude_side() as side:
        done = side.no_daemon("PreToolUse", pre("rm -rf c", "t", "s"))
        assert done.code == 0
        assert done.answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert not (side.runtime / _launch.SOCKET_NAME).exists()


def test_every_real_payload_through_real_clients() -> None:
    with claude_side() as side:
        for name, line in payload_lines():
            event = json.loads(line)["hook_event_name"]
            result = side.hook(event, line.encode())
            assert result.code == 0, (name, result.stderr)
            assert result.stderr == ""
            if result.stdout:
                assert isinstance(json.loads(result.stdout), dict)
        status = _daemon.request_control(side.options(), "@status")
        assert status is not None
        assert status["events_served"] == 49
        assert status["dispatch_errors"] == 0


def test_a_new_host_waits_for_the_client_deadline_not_longer() -> None:
    with claude_side(HOOKCHAIN_CONNECT_DEADLINE="0") as side:
        started = time.monotonic()
        result = side.hook("Stop", {"session_id": "s", "hook_event_name": "Stop"})
        assert result.code == 0
        assert "host unreachable" in result.stderr
        assert time.monotonic() - started < 10


def test_hookchain_hook_forwards_like_the_client_and_serve_refuses_a_second_host() -> None:
    with claude_side() as side:
        command = [sys.executable, "-c", "from framework.cli.app import main; main()"]
        payload = json.dumps(pre("rm -rf d", "t", "s")).encode()
        done = subprocess.run(
            [*command, "hook", "PreToolUse"], input=payload, env=side.env, capture_output=True
        )
        assert done.returncode == 0
        assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        second = subprocess.run([*command, "serve"], env=side.env, capture_output=True)
        assert second.returncode == 1
        assert b"already runs" in second.stderr


def test_a_host_whose_socket_is_removed_exits() -> None:
    with claude_side(HOOKCHAIN_IDLE_EXIT="1") as side:
        side.hook("Notification", {"session_id": "s", "hook_event_name": "Notification"})
        pid = side.lock_pid()
        assert pid is not None
        side.hook("PreToolUse", pre("ls", "t", "s"))  # a suspended call keeps it from idling out
        (side.runtime / _launch.SOCKET_NAME).unlink()
        assert side.wait_gone(pid, timeout=15)


@pytest.mark.anyio
async def test_a_connection_from_another_uid_is_refused_unanswered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Another user cannot be made to connect here, so the kernel's answer is replaced.
    root = Path(tempfile.mkdtemp(prefix="hc-"))
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(root / "data"))
    options = _daemon.ServeOptions(runtime_dir=root / "rt")
    _daemon.ensure_private_dir(options.runtime_dir)

    def exchange() -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(options.socket_path))
            try:
                sock.sendall(b"HC1 - - @status\n")
                sock.shutdown(socket.SHUT_WR)
                return b"".join(iter(lambda: sock.recv(65536), b""))
            except (ConnectionResetError, BrokenPipeError):
                # Closed before or with the request unread: refused all the same.
                return b""

    try:
        async with (
            Host(plugins=[probe], entry_points=False, store="memory://", env={}) as host,
            anyio.create_task_group() as group,
        ):
            server = _daemon.Server(options, host)
            group.start_soon(server.run)
            for _ in range(1000):
                if options.socket_path.exists():
                    break
                await anyio.sleep(0.01)
            assert b'"pid"' in await anyio.to_thread.run_sync(exchange)
            monkeypatch.setattr(_daemon, "peer_uid", lambda sock: os.getuid() + 1)
            assert await anyio.to_thread.run_sync(exchange) == b""
            assert server.refused_peers == 1
            assert server.bridge is not None
            assert server.bridge.served == 0
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_client_imports_nothing_beyond_the_standard_library() -> None:
    with claude_side() as side:
        assert side.hook("PreToolUse", pre("rm -rf w", "t0", "s")).code == 0  # the host is warm
        process = subprocess.run(
            [sys.executable, "-S", "-X", "importtime", CLIENT, "PreToolUse"],
            input=json.dumps(pre("rm -rf x", "t1", "s")).encode(),
            env=side.env,
            capture_output=True,
            timeout=30,
        )
        assert json.loads(process.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        imported = {
            line.rsplit("|", 1)[1].strip().split(".")[0]
            for line in process.stderr.decode().splitlines()
            if line.startswith("import time:") and not line.endswith("imported package")
        }
        assert {"_client_core", "_launch"} <= imported  # the client and its wire names
        assert imported - {"_client_core", "_launch"} <= set(sys.stdlib_module_names)
        assert not {"framework", "json", "typing", "socket", "os"} & imported


def host_script(pid: int) -> str:
    """The launcher file a host was started from (its argv[1])."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1].decode()


def test_a_client_of_another_installation_restarts_the_host_as_its_own() -> None:
    with claude_side() as side:
        other = side.root / "other"
        shutil.copytree(
            Path(CLIENT).parent,
            other / "framework",
            ignore=shutil.ignore_patterns("__pycache__"),
            copy_function=shutil.copy,  # new times, as an install of another version has
        )
        other_client = str(other / "framework" / "_client.py")
        first = subprocess.run(
            [sys.executable, "-S", other_client, "PreToolUse"],
            input=json.dumps(pre("rm -rf a", "t1", "s")).encode(),
            env=side.env,
            capture_output=True,
            timeout=60,
        )
        assert json.loads(first.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        old = side.host_pid()
        assert old is not None
        assert host_script(old).startswith(str(other))
        again = side.hook("PreToolUse", pre("rm -rf b", "t2", "s"))
        assert again.code == 0
        assert again.stderr == ""
        assert again.answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert side.wait_gone(old)
        new = side.host_pid()
        assert new not in (None, old)
        assert host_script(new) == str(Path(_launch.__file__))


def test_session_end_never_starts_a_host_and_skips_at_once() -> None:
    with claude_side() as side:
        end = {"session_id": "s", "hook_event_name": "SessionEnd", "reason": "other"}
        skipped = side.hook("SessionEnd", end)
        assert skipped.code == 0
        assert skipped.stderr.startswith("hookchain: host unreachable")
        assert not side.runtime.exists()
        assert side.hook("Stop", {"session_id": "s", "hook_event_name": "Stop"}).stderr == ""
        served = side.hook("SessionEnd", end)
        assert (served.code, served.stdout, served.stderr) == (0, "", "")
        assert side.probe("session.end") == [["session.end", "s", "other"]]


def test_hookchain_hook_no_daemon_answers_without_a_host() -> None:
    with claude_side() as side:
        command = [sys.executable, "-c", "from framework.cli.app import main; main()"]
        done = subprocess.run(
            [*command, "hook", "--no-daemon", "PreToolUse"],
            input=json.dumps(pre("rm -rf e", "t", "s")).encode(),
            env=side.env,
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert side.host_pid() is None
