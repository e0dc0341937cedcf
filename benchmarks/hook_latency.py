"""Hook latency: interpreter start-up against a round trip through client and warm host.

    python benchmarks/hook_latency.py [--runs 50] [--cold-runs 50] [--rss-events 2000]
                                      [--long-events 100000] [--long-sessions 20]

(a) `<python> -S -c pass`; (b) a PreToolUse through `_client.py` and a warm host with the installed
plugins; (c) the same with `--no-daemon`; (d) the same PreToolUse POSTed over http, one connection
per request as Claude Code does; (e) a Codex and a Gemini CLI PreToolUse through the same client
and host. Prints p50s, the host's RSS before and after serving many events, the host's RSS after
10,000 and after 100,000 events spread over 20 sessions (sent on the socket as the client sends
them, without a process per call), the peak RSS of this process, and the ratios (last lines).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from framework import _client, _launch
from framework.claude_code import daemon as _daemon
from framework.claude_code import http as _http
from framework.claude_code import install as _install

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "hook-payloads"
CLIENT = str(Path(_client.__file__).resolve())
WARM_UP_S = 2.0


def pre_tool_use() -> dict[str, Any]:
    path = CORPUS / "01_PreToolUse.jsonl"
    if not path.exists():
        raise SystemExit(f"the hook payload corpus is missing: expected {path}")
    payload = json.loads(path.read_text().splitlines()[0])
    assert isinstance(payload, dict)
    return payload


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(runs: int, once: Callable[[int], None]) -> list[float]:
    samples = []
    for index in range(runs):
        started = time.perf_counter()
        once(index)
        samples.append(time.perf_counter() - started)
    return samples


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@contextlib.contextmanager
def private_host() -> Iterator[dict[str, str]]:
    root = Path(tempfile.mkdtemp(prefix="hc-bench-"))
    env = {
        **os.environ,
        "HOOKCHAIN_RUNTIME_DIR": str(root / "rt"),
        "HOOKCHAIN_DATA_DIR": str(root / "data"),
        "HOOKCHAIN_CONNECT_DEADLINE": "30",
    }
    options = _daemon.ServeOptions.from_env(env)
    try:
        yield env
    finally:
        lock = options.runtime_dir / _daemon.LOCK_NAME
        pid_text = lock.read_text().strip() if lock.exists() else ""
        _daemon.stop_host(options)
        if pid_text.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_text), signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


def socket_event(path: str, env: dict[str, str], event: str, payload: bytes) -> None:
    """One hook call on the host's socket, framed as the client frames it (cwd + environment)."""
    context = b"\0".join([os.getcwdb(), *(f"{k}={v}".encode() for k, v in env.items())])
    stamp = _daemon.host_stamp()
    head = f"{_launch.PROTOCOL} {stamp} {event}\n{os.urandom(8).hex()} {len(context)}\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(path)
        sock.sendall(head.encode() + context + payload)
        sock.shutdown(socket.SHUT_WR)
        answer = b"".join(iter(lambda: sock.recv(65536), b""))
    parsed = _launch.parse_answer(answer[1:] if answer[:1] == _launch.ACCEPTED else answer)
    if parsed is None or parsed[0] != 0 or parsed[1]:
        raise SystemExit(f"socket hook failed: {answer[:300]!r}")


def run_hook(env: dict[str, str], argv: list[str], payload: bytes) -> None:
    done = subprocess.run(argv, input=payload, env=env, capture_output=True, check=False)
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"hook failed ({done.returncode}): {done.stderr.decode()[:500]}")


def other_harnesses(
    env: dict[str, str], python: str, base: dict[str, Any], runs: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Warm PreToolUse round trips of a Codex and a Gemini CLI payload through the same client
    and host (`codex:PreToolUse`, `gemini:BeforeTool`), each call then finished by its result.

    Each round trip is timed next to a bare `python -S` start, so the ratio compares two things
    measured under the same load (the machine is shared): harness → (round trips, bare starts).
    """
    session = {k: base[k] for k in ("session_id", "transcript_path", "cwd") if k in base}

    def codex(index: int, event: str = "PreToolUse") -> str:
        call = {**session, "hook_event_name": event, "model": "gpt-5-codex", "turn_id": "t1"}
        call.update(tool_name="Bash", tool_input={"command": f"ls {index}"})
        call.update(tool_use_id=f"call_{index}", permission_mode="bypassPermissions")
        return json.dumps({**call, "tool_response": "ok\n"} if event != "PreToolUse" else call)

    def gemini(index: int, event: str = "BeforeTool") -> str:
        call = {**session, "hook_event_name": event, "timestamp": "2026-12-01T00:00:00Z"}
        call.update(tool_name="run_shell_command", tool_input={"command": f"ls {index}"})
        if event == "AfterTool":
            call["tool_response"] = {"llmContent": "Output: ok\nExit Code: 0", "returnDisplay": ""}
        return json.dumps(call)

    def measured(
        label: str, pre: str, post: str, build: Callable[..., str]
    ) -> tuple[list[float], list[float]]:
        def once(index: int) -> None:
            run_hook(env, [python, "-S", CLIENT, f"{label}:{pre}"], build(index).encode())

        def result(index: int) -> None:
            run_hook(env, [python, "-S", CLIENT, f"{label}:{post}"], build(index, post).encode())

        for index in range(10):
            once(-1 - index)
            result(-1 - index)
        samples: list[float] = []
        bare: list[float] = []
        for index in range(runs):
            bare += timed(1, lambda _: run_hook(env, [python, "-S", "-c", "pass"], b""))
            samples += timed(1, lambda _, i=index: once(i))
            result(index)
        return samples, bare

    return {
        "codex": measured("codex", "PreToolUse", "PostToolUse", codex),
        "gemini": measured("gemini", "BeforeTool", "AfterTool", gemini),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--cold-runs", type=int, default=50)
    parser.add_argument("--rss-events", type=int, default=2000)
    parser.add_argument("--long-events", type=int, default=100_000)
    parser.add_argument("--long-sessions", type=int, default=20)
    args = parser.parse_args()
    python = sys.executable
    base = pre_tool_use()
    _install.precompile_client()  # as `hookchain install` does

    def payload(index: int, prefix: str) -> bytes:
        return json.dumps({**base, "tool_use_id": f"{prefix}{index}"}).encode()

    def finish(env: dict[str, str], data: bytes) -> None:
        after = {**json.loads(data), "hook_event_name": "PostToolUse", "tool_response": {}}
        run_hook(env, [python, "-S", CLIENT, "PostToolUse"], json.dumps(after).encode())

    bare = timed(
        args.runs, lambda i: run_hook(os.environ.copy(), [python, "-S", "-c", "pass"], b"")
    )
    with private_host() as env:
        credentials = _http.ensure_credentials(Path(env["HOOKCHAIN_DATA_DIR"]))
        start = {"session_id": base["session_id"], "hook_event_name": "SessionStart"}
        run_hook(env, [python, "-S", CLIENT, "SessionStart"], json.dumps(start).encode())
        status = _daemon.request_control(_daemon.ServeOptions.from_env(env), "@status")
        assert status is not None
        host_pid = int(status["pid"])
        plugins = [p["name"] for p in status["plugins"] if p["status"] == "loaded"]

        def command(index: int) -> None:
            run_hook(env, [python, "-S", CLIENT, "PreToolUse"], payload(index, "cmd"))

        # A new host finishes its start-up work for about a second after it first answers; the
        # warm path is what a session sees once the host is up, so warm-up runs for a while.
        warm_until = time.monotonic() + WARM_UP_S
        index = 0
        while index < 5 or time.monotonic() < warm_until:
            index += 1
            command(-index)
            finish(env, payload(-index, "cmd"))
        warm = timed(args.runs, command)
        for index in range(args.runs):
            finish(env, payload(index, "cmd"))
        others = other_harnesses(env, python, base, args.runs)

        def http_post(body: bytes) -> None:
            connection = http.client.HTTPConnection("127.0.0.1", credentials.port, timeout=30)
            try:
                headers = {"Authorization": f"Bearer {credentials.token}"}
                connection.request("POST", "/hook", body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    raise SystemExit(f"http hook failed: {response.status}")
            finally:
                connection.close()

        def over_http(index: int) -> None:
            http_post(payload(index, "http"))

        def http_result(index: int) -> None:
            after = {**json.loads(payload(index, "http")), "hook_event_name": "PostToolUse"}
            http_post(json.dumps({**after, "tool_response": {}}).encode())

        def http_pair(index: int) -> None:
            over_http(index)
            http_result(index)

        over_http_samples = timed(args.runs, over_http)
        for index in range(args.runs):
            http_result(index)

        for index in range(200):
            http_pair(index + 2_000_000)
        rss_before = rss_kib(host_pid)
        for index in range(args.rss_events):
            http_pair(index + 3_000_000)
        rss_after = rss_kib(host_pid)
        suspended = _daemon.request_control(_daemon.ServeOptions.from_env(env), "@status")

        # The long run: Pre/Post pairs round-robin over the sessions, RSS read at 10 % and 100 %.
        sock_path = str(_daemon.ServeOptions.from_env(env).socket_path)
        sessions = [f"bench-{n}" for n in range(args.long_sessions)]
        long_rss: dict[int, int] = {}
        checkpoints = {args.long_events // 10, args.long_events}
        sent = 0
        while sent < args.long_events:
            session = sessions[(sent // 2) % len(sessions)]
            pre = {**base, "session_id": session, "tool_use_id": f"long{sent}"}
            socket_event(sock_path, env, "PreToolUse", json.dumps(pre).encode())
            after = {**pre, "hook_event_name": "PostToolUse", "tool_response": {}}
            socket_event(sock_path, env, "PostToolUse", json.dumps(after).encode())
            sent += 2
            if sent in checkpoints:
                long_rss[sent] = rss_kib(host_pid)

    with private_host() as env:
        cold = timed(
            args.cold_runs,
            lambda i: run_hook(
                env, [python, "-S", CLIENT, "--no-daemon", "PreToolUse"], payload(i, "cold")
            ),
        )

    print(f"interpreter               {python}")
    print(f"plugins in the host       {', '.join(plugins) or '-'}")
    print(f"client protocol           {_launch.PROTOCOL}/{_launch.VERSION}")
    print(f"(a) python -S -c pass     p50 {p50(bare):8.2f} ms  ({args.runs} runs)")
    print(f"(b) PreToolUse, warm host p50 {p50(warm):8.2f} ms  ({args.runs} runs)")
    print(f"(c) PreToolUse, no daemon p50 {p50(cold):8.2f} ms  ({args.cold_runs} runs)")
    print(f"(d) PreToolUse over http  p50 {p50(over_http_samples):8.2f} ms  ({args.runs} runs)")
    print(
        f"host RSS                  {rss_before} KiB after 200 warm-up pairs, {rss_after} KiB "
        f"after {args.rss_events} more Pre/Post pairs ({rss_after - rss_before:+d} KiB); "
        f"suspended calls left: {suspended['suspended_calls'] if suspended else '?'}"
    )
    first, last = sorted(long_rss)
    change = 100 * (long_rss[last] - long_rss[first]) / long_rss[first]
    print(
        f"host RSS over {args.long_sessions} sessions {long_rss[first]} KiB after {first} events, "
        f"{long_rss[last]} KiB after {last} events ({change:+.1f} %)"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"peak RSS                  this process {peak} KiB, largest child {children} KiB")
    print(f"ratio hook_roundtrip/python_S_start = {p50(warm) / p50(bare):.2f}")
    for name, (trips, starts) in others.items():
        ratio = p50(trips) / p50(starts)
        print(
            f"ratio {name}_roundtrip/python_S_start = {ratio:.2f}  (interleaved, {args.runs} runs)"
        )
    print(f"ratio http_roundtrip/command_roundtrip = {p50(over_http_samples) / p50(warm):.2f}")


if __name__ == "__main__":
    main()
