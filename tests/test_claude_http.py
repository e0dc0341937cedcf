"""Claude Code http hooks end to end: a real HTTP client against the warm host on 127.0.0.1."""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import signal
import socket
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from claude_e2e_kit import ClaudeSide, claude_side, post, pre

from framework.claude_code import http as _http

pytestmark = pytest.mark.slow
START = {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}


def post_hook(
    port: int, body: bytes | dict[str, Any], token: str | None, path: str = "/hook"
) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body=data, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def http_side(side: ClaudeSide) -> _http.HttpCredentials:
    credentials = _http.ensure_credentials(Path(side.env["HOOKCHAIN_DATA_DIR"]))
    # SessionStart stays a command hook: it is what starts the host for the http ones.
    assert side.hook("SessionStart", START).code == 0
    return credentials


def test_credentials_are_private_random_and_stable(tmp_path: Path) -> None:
    first = _http.ensure_credentials(tmp_path / "data")
    again = _http.ensure_credentials(tmp_path / "data")
    other = _http.ensure_credentials(tmp_path / "other")
    assert first == again
    assert first.token != other.token
    assert len(first.token) >= 40
    token_file = _http.token_path(tmp_path / "data")
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token_file.chmod(0o644)
    with pytest.raises(_http.CredentialsError, match="private"):
        _http.ensure_credentials(tmp_path / "data")
    assert _http.load_credentials(tmp_path / "none") is None


def test_a_hook_over_http_gets_the_same_answer_as_over_the_socket() -> None:
    with claude_side() as side:
        credentials = http_side(side)
        status, answer = post_hook(credentials.port, pre("rm -rf /", "t1", "s"), credentials.token)
        assert status == 200
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        status, answer = post_hook(credentials.port, pre("ls", "t2", "s"), credentials.token)
        assert (status, answer) == (200, {})
        # One host, two transports: the call suspended over http resumes over the socket.
        resumed = side.hook("PostToolUse", post(pre("ls", "t2", "s")))
        assert "probe saw Bash (ok)" in resumed.answer["hookSpecificOutput"]["additionalContext"]


def test_missing_or_wrong_tokens_get_401_and_dispatch_nothing() -> None:
    with claude_side() as side:
        credentials = http_side(side)
        for token in (None, "wrong", credentials.token + "x", ""):
            status, answer = post_hook(credentials.port, pre("ls", "t", "s"), token)
            assert status == 401
            assert "token" in answer["error"]
        assert side.probe("tool") == []
        assert side.probe("turn.start") == []


def test_oversized_malformed_and_misrouted_requests_are_refused() -> None:
    with claude_side() as side:
        credentials = http_side(side)
        big = json.dumps({**pre("x", "t", "s"), "pad": "y" * (_http.MAX_BODY_BYTES + 1)})
        status, answer = post_hook(credentials.port, big.encode(), credentials.token)
        assert status == 200  # a 413 would pass without a word: it is answered "too large"
        assert "hook payload too large" in answer["systemMessage"]
        status, answer = post_hook(credentials.port, b"{nope", credentials.token)
        assert status == 400
        assert "not JSON" in answer["error"]
        status, _ = post_hook(credentials.port, pre("x", "t", "s"), credentials.token, "/other")
        assert status == 404
        assert side.probe("tool") == []


def test_concurrent_sessions_over_http() -> None:
    with claude_side() as side:
        credentials = http_side(side)
        calls = [pre(f"c{i}", f"t{s}{i}", f"sess-{s}") for s in "xy" for i in range(5)]

        def one(call: dict[str, Any]) -> dict[str, Any]:
            status, answer = post_hook(credentials.port, call, credentials.token)
            assert status == 200
            assert answer == {}
            status, answer = post_hook(credentials.port, post(call), credentials.token)
            assert status == 200
            return answer

        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            answers = list(pool.map(one, calls))
        for answer in answers:
            assert answer["hookSpecificOutput"]["additionalContext"].startswith("[claude-probe]")
        seen = {(entry[1], entry[2]) for entry in side.probe("tool")}
        assert seen == {(c["session_id"], c["tool_use_id"]) for c in calls}


def test_a_restarted_host_serves_http_on_the_recorded_port() -> None:
    with claude_side() as side:
        credentials = http_side(side)
        pid = side.host_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert side.wait_gone(pid)
        with pytest.raises(ConnectionRefusedError):
            post_hook(credentials.port, pre("ls", "t", "s"), credentials.token)
        assert side.hook("SessionStart", START).code == 0
        status, answer = post_hook(credentials.port, pre("rm -rf /", "t", "s"), credentials.token)
        assert status == 200
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback (no packet is sent to find it)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("198.51.100.1", 9))
            address = str(probe.getsockname()[0])
    except OSError:
        return None
    return None if ipaddress.ip_address(address).is_loopback else address


def test_a_peer_that_is_not_loopback_is_refused_and_nothing_dispatched() -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no address besides loopback to connect from")
    with claude_side() as side:
        credentials = http_side(side)
        connection = http.client.HTTPConnection(
            "127.0.0.1", credentials.port, timeout=30, source_address=(address, 0)
        )
        try:
            body = json.dumps(pre("ls", "t", "s"))
            headers = {"Authorization": f"Bearer {credentials.token}"}
            connection.request("POST", "/hook", body=body, headers=headers)
            response = connection.getresponse()
            assert response.status == 403
            assert "loopback" in json.loads(response.read())["error"]
        finally:
            connection.close()
        assert side.probe("tool") == []
        status, _ = post_hook(credentials.port, pre("rm -rf /", "t", "s"), credentials.token)
        assert status == 200


def test_the_port_can_be_chosen_by_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOKCHAIN_HTTP_PORT", "45678")
    assert _http.ensure_credentials(tmp_path / "data").port == 45678
    monkeypatch.delenv("HOOKCHAIN_HTTP_PORT")
    recorded = _http.ensure_credentials(tmp_path / "data").port
    assert (tmp_path / "data" / _http.PORT_FILE).read_text().strip() == str(recorded)
    assert _http.ensure_credentials(tmp_path / "data").port == recorded
