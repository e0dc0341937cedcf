"""Running the real Claude Code CLI with hookchain installed, against the scripted mock model API.

A `Sandbox` is one throwaway folder holding everything a scenario touches: HOME, TMPDIR, the
runtime dir of its own warm host, hookchain's data dir (SQLite store, http token), an `outside`
folder, and any number of projects (git repos). Claude Code runs under bwrap with the whole
machine read-only except the sandbox, so a guard that fails lets a scripted command change only
the sandbox. Everything of the user's own (HOME, the real runtime dir) is never seen.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from claude_e2e_kit import ClaudeSide, _reap_host
from mock_api import MockAPI, Step, ToolResult

from framework.claude_code import daemon as _daemon

HOOKCHAIN = [sys.executable, "-c", "from framework.cli.app import main; main()"]
RUN_TIMEOUT_S = 90.0

_DEBUG_MARKS = {
    "first_byte": "[API:timing] first byte after",
    "start": "[Stall] tool_dispatch_start",
    "end": "[Stall] tool_dispatch_end",
    "request": "[API REQUEST] /v1/messages",
}
"""Lines of Claude Code 2.1.197's `--debug-file` that time a tool call from its side."""

CLAUDE_FLAGS = (
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-hook-events",
    "--no-session-persistence",
)
BYPASS = "bypassPermissions"
"""The default `permission_mode` of a run: `--dangerously-skip-permissions`."""


@dataclass
class Run:
    """One `claude -p` run: exit code, parsed stream-json records, stderr, the debug log."""

    code: int
    records: list[dict[str, Any]]
    stderr: str
    debug: str
    wall_s: float
    api: MockAPI
    timed_out: bool = False

    def of_type(self, kind: str, subtype: str | None = None) -> list[dict[str, Any]]:
        return [
            r
            for r in self.records
            if r.get("type") == kind and (subtype is None or r.get("subtype") == subtype)
        ]

    def hook_responses(self, event: str | None = None) -> list[dict[str, Any]]:
        """Claude Code's own record of each hook that ran (`--include-hook-events`)."""
        return [
            r
            for r in self.of_type("system", "hook_response")
            if event is None or r.get("hook_event") == event
        ]

    def hook_events(self) -> list[str]:
        return [str(r.get("hook_event")) for r in self.of_type("system", "hook_started")]

    @property
    def result(self) -> dict[str, Any]:
        found = self.of_type("result")
        return found[-1] if found else {}

    def tool_results(self, thread: str | None = "") -> list[ToolResult]:
        return self.api.tool_results(thread)

    def reminders(self, thread: str | None = "") -> list[str]:
        return self.api.reminders(thread)

    def system_messages(self) -> list[str]:
        """What hooks showed the person (`systemMessage` of every hook answer)."""
        shown = []
        for r in self.hook_responses():
            try:
                answer = json.loads(r.get("stdout") or "{}")
            except ValueError:
                continue
            if isinstance(answer, dict) and answer.get("systemMessage"):
                shown.append(str(answer["systemMessage"]))
        return shown

    def tool_overheads_ms(self) -> list[float]:
        """Per tool call, by Claude Code's own debug clock: the time from the first byte of the
        answer carrying the call to the tool's start, plus from the tool's end to the next model
        request. The tool's own run time is left out; PreToolUse and PostToolUse hooks are in."""
        marks: list[tuple[str, datetime]] = []
        for line in self.debug.splitlines():
            stamp, _, text = line.partition(" ")
            kind = next((k for k, needle in _DEBUG_MARKS.items() if needle in text), None)
            if kind is not None:
                with contextlib.suppress(ValueError):
                    marks.append((kind, datetime.fromisoformat(stamp.replace("Z", "+00:00"))))
        overheads = []
        first_byte = started = ended = None
        for kind, at in marks:
            if kind == "first_byte":
                first_byte = at
            elif kind == "start" and first_byte is not None:
                started = at
            elif kind == "end" and started is not None:
                ended = at
            elif kind == "request" and ended is not None and started is not None:
                assert first_byte is not None
                overheads.append(((started - first_byte) + (at - ended)).total_seconds() * 1000)
                first_byte = started = ended = None
        return overheads

    def explain(self) -> str:
        """For assertion messages: what happened, briefly."""
        lines = [f"exit {self.code} after {self.wall_s:.1f} s (timed out: {self.timed_out})"]
        lines += [json.dumps(r)[:400] for r in self.records if r.get("type") != "system"][-12:]
        lines.append("stderr: " + self.stderr[-1500:])
        return "\n".join(lines)


@dataclass
class Project:
    """One workspace inside the sandbox: a git repo with a first commit."""

    sandbox: Sandbox
    path: Path

    def hookchain(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """The real `hookchain` CLI, run in this project with the sandbox's environment."""
        return subprocess.run(
            [*HOOKCHAIN, *args],
            cwd=self.path,
            env={**self.sandbox.env, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def install(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = self.hookchain("install", *args)
        assert done.returncode == 0, done.stderr
        return done

    def config(self, text: str) -> Path:
        path = self.path / "hookchain.toml"
        path.write_text(text, encoding="utf-8")
        return path

    def git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args],
            cwd=self.path,
            env=self.sandbox.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )

    def run(
        self,
        prompt: str | Sequence[str],
        script: Sequence[Step],
        *,
        threads: Mapping[str, Sequence[Step]] | None = None,
        timeout: float = RUN_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
        before_answer: Callable[[str, int], None] | None = None,
        permission_mode: str = BYPASS,
        flags: Sequence[str] = (),
    ) -> Run:
        """Run `claude -p prompt` here against a mock answering `script`; bounded by `timeout`.

        Several prompts are sent in one session (stream-json input), one after the other.
        `before_answer(thread, step)` runs before the mock answers each step (to disturb the host
        at a known point of the session). `permission_mode` is Claude Code's `--permission-mode`
        (`default`, `acceptEdits`, `plan`; the default skips its permission checks). `flags`:
        more of Claude Code's options (`--add-dir DIR`).
        """
        return self.sandbox.run_claude(
            self, prompt, script, threads, timeout, env or {}, before_answer, permission_mode,
            flags,
        )  # fmt: skip

    def trust(self) -> None:
        """Accept Claude Code's trust dialog for this project: without it, `-p` ignores the
        project's permission rules ("this workspace has not been trusted")."""
        path = Path(self.sandbox.env["HOME"]) / ".claude.json"
        state = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        state.setdefault("projects", {}).setdefault(str(self.path), {})[
            "hasTrustDialogAccepted"
        ] = True
        path.write_text(json.dumps(state), encoding="utf-8")

    def settings(self, **extra: Any) -> Path:
        """Merge top-level keys into the project's `.claude/settings.json` (after `install`)."""
        path = self.path / ".claude" / "settings.json"
        current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({**current, **extra}, indent=2), encoding="utf-8")
        return path


@dataclass
class Sandbox:
    root: Path
    binary: Path
    env: dict[str, str] = field(default_factory=dict)
    runs: int = 0

    @property
    def outside(self) -> Path:
        """A folder outside every project, still inside the sandbox."""
        return self.root / "outside"

    @property
    def data_dir(self) -> Path:
        return Path(self.env["HOOKCHAIN_DATA_DIR"])

    @property
    def side(self) -> ClaudeSide:
        """The host side of the existing hook-client kit: status, pid, stop."""
        return ClaudeSide(root=self.root, env=self.env)

    def status(self) -> dict[str, Any] | None:
        return _daemon.request_control(self.side.options(), "@status")

    def host_pid(self) -> int | None:
        pid: int | None = self.side.host_pid()
        return pid

    def project(self, name: str = "proj") -> Project:
        path = self.root / name
        path.mkdir()
        project = Project(self, path)
        project.git("init", "-q", "-b", "main")
        (path / "README.md").write_text(f"# {name}\n", encoding="utf-8")
        project.git("add", "README.md")
        project.git("commit", "-q", "-m", "first")
        return project

    def http_token(self) -> str:
        return (self.data_dir / "http-token").read_text(encoding="ascii").strip()

    def run_claude(
        self,
        project: Project,
        prompt: str | Sequence[str],
        script: Sequence[Step],
        threads: Mapping[str, Sequence[Step]] | None,
        timeout: float,
        env: Mapping[str, str],
        before_answer: Callable[[str, int], None] | None,
        permission_mode: str = BYPASS,
        flags: Sequence[str] = (),
    ) -> Run:
        self.runs += 1
        debug = self.root / f"debug-{self.runs}.txt"
        with MockAPI(
            script, threads=threads, max_seconds=timeout + 30, before_answer=before_answer
        ) as api:
            run_env = {**self.env, "ANTHROPIC_BASE_URL": api.url, **env}
            if (self.data_dir / "http-token").exists():
                # What `install --transport http` tells the person to export before starting.
                run_env.setdefault("HOOKCHAIN_TOKEN", self.http_token())
            prompts = [prompt] if isinstance(prompt, str) else list(prompt)
            argv = [*jail(self.root), str(self.binary), "-p"]
            if len(prompts) == 1:
                argv.append(prompts[0])
                stdin = b""
            else:
                argv += ["--input-format", "stream-json"]
                stdin = b"".join(
                    json.dumps({"type": "user", "message": {"role": "user", "content": p}}).encode()
                    + b"\n"
                    for p in prompts
                )
            argv += [*CLAUDE_FLAGS, *permission_flags(permission_mode), *flags]
            argv += ["--debug-file", str(debug)]
            started = time.monotonic()
            process = subprocess.Popen(
                argv,
                cwd=project.path,
                env=run_env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            timed_out = False
            try:
                out, err = process.communicate(stdin, timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                out, err = process.communicate(timeout=10)
            finally:
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)
            wall = time.monotonic() - started
        records = []
        for line in out.decode(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    records.append(record)
        text = debug.read_text(errors="replace") if debug.exists() else ""
        return Run(
            process.returncode, records, err.decode(errors="replace"), text, wall, api, timed_out
        )


def permission_flags(mode: str) -> list[str]:
    if mode == BYPASS:
        return ["--dangerously-skip-permissions"]
    return ["--permission-mode", mode]


def jail(writable: Path) -> list[str]:
    """bwrap: the machine read-only, only `writable` writable; loopback stays shared."""
    return [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--tmpfs",
        "/tmp",
        "--bind",
        str(writable),
        str(writable),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--die-with-parent",
    ]


def sandbox_env(root: Path, binary: Path) -> dict[str, str]:
    bin_dir = root / "bin"
    bin_dir.mkdir()
    # `install --transport http` asks `claude --version`; the Bash tool uses this PATH too.
    (bin_dir / "claude").symlink_to(binary)
    home = root / "home"
    (home / "tmp").mkdir(parents=True)
    return {
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": "sk-ant-mock-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",
        "GIT_AUTHOR_NAME": "e2e",
        "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
        "GIT_COMMITTER_NAME": "e2e",
        "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOOKCHAIN_RUNTIME_DIR": str(root / "rt"),
        "HOOKCHAIN_DATA_DIR": str(root / "data"),
        "HOOKCHAIN_IDLE_EXIT": "300",
    }


@contextlib.contextmanager
def sandbox(binary: Path) -> Iterator[Sandbox]:
    # A short path: Unix socket paths are limited to about 100 bytes.
    root = Path(tempfile.mkdtemp(prefix="hce-"))
    (root / "outside").mkdir()
    box = Sandbox(root=root, binary=binary, env=sandbox_env(root, binary))
    try:
        yield box
    finally:
        _reap_host(box.side)
        _kill_strays(root)
        shutil.rmtree(root, ignore_errors=True)


def _kill_strays(root: Path) -> None:
    """Kill, by pid, what still runs in the sandbox: a host of another runtime dir a scenario
    chose, one it froze or moved, a command Claude Code left behind. Nothing outside `root`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == str(root) or cwd.startswith(f"{root}/"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
