"""A throwaway tree and a jail to run real bash and git in: bubblewrap with the whole
filesystem read-only but the tree, no network, HOME, TMPDIR and cwd inside the tree. The
"outside" folder, the host's folders and a remote repository are inside the tree too, so a
command that gets past the guard harms nothing real.

`Tree.state()` is what an attack may not change: the files outside the writable roots, the
protected files inside them, and the git work (uncommitted changes, branches, tags, remote);
`Tree.held()` what it may not take from write-guard's own: its store and the repository's
snapshot refs and id (the host adds to them before a guarded command runs)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from framework import Action, Host, SessionStart, ToolCall, ToolResult
from wg_attack_table import Attack

import write_guard

BWRAP = shutil.which("bwrap")
HOOKCHAIN = Path(sys.executable).parent / "hookchain"
RUN_TIMEOUT_S = 20.0
DIRTY = "dirty\n"
UNTRACKED = "untracked work\n"
GIT_ENV = {
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _sh(cwd: Path, *argv: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd.parent / "home")}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, (argv, done.stderr)
    return done.stdout


def git(cwd: Path, *argv: str) -> str:
    """The host's git in `cwd` with the test's environment (`git_env`: the tree's HOME and
    fixed dates), wherever `cwd` is in the tree; its output."""
    done = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, timeout=30,
                          check=False)  # fmt: skip
    assert done.returncode == 0, (argv, done.stderr)
    return done.stdout


def build_template(root: Path) -> None:
    """The tree every case starts from (built once, copied per run)."""
    ws, out, home = root / "ws", root / "out", root / "home"
    for folder in (ws / "sub", out, home / ".claude", root / "tmp", root / "data", root / "run"):
        folder.mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n\tname = t\n\temail = t@example.invalid\n")
    (home / ".bashrc").write_text("# rc\n")
    (home / ".claude" / "settings.json").write_text("{}\n")
    (out / "victim.txt").write_text("victim\n")
    with sqlite3.connect(root / "data" / "store.sqlite") as db:
        db.execute("create table kv (k text, v text)")
        db.execute("insert into kv values ('a', 'b')")
    (root / "run" / "host.sock").write_text("")
    remote = root / "remote.git"
    _sh(root, "git", "init", "-q", "--bare", "-b", "main", str(remote))
    _sh(ws, "git", "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("a\n")
    (ws / "c.txt").write_text("c\n")
    (ws / "sub" / "pre-commit").write_text("#!/bin/sh\ntouch /tmp/planted\n")
    _sh(ws, "git", "add", ".")
    _sh(ws, "git", "commit", "-qm", "first")
    _sh(ws, "git", "tag", "v1")
    _sh(ws, "git", "checkout", "-q", "-b", "feature")
    (ws / "f.txt").write_text("f\n")
    _sh(ws, "git", "add", "f.txt")
    _sh(ws, "git", "commit", "-qm", "feature")
    _sh(ws, "git", "checkout", "-q", "main")
    _sh(ws, "git", "remote", "add", "origin", str(remote))
    _sh(ws, "git", "push", "-q", str(remote), "main", "feature")
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text("{}\n")
    (ws / "c.diff").write_text("--- c.txt\n+++ c.txt\n@@ -1 +1 @@\n-c\n+patched\n")
    (ws / "attrs").write_text("* filter=x\n")
    (ws / "tx").write_text("t\n")
    _sh(ws, "tar", "-cf", "t.tar", "tx")
    os.remove(ws / "tx")
    _sh(ws, "python3", "-c", "import zipfile; zipfile.ZipFile('z.zip','w').writestr('zx','z')")
    os.symlink("../out", ws / "lnk")
    (ws / "a.txt").write_text(DIRTY)
    (ws / "b.txt").write_text("b\n")
    _sh(ws, "git", "add", "b.txt")
    (ws / "notes.txt").write_text(UNTRACKED)  # new work, never added


def build_nested_template(root: Path) -> None:
    """`build_template`'s tree plus two repositories inside the workspace: a submodule `mod`
    (its `.git` a gitfile into `.git/modules/mod`) and a nested clone `nested`."""
    build_template(root)
    ws, lib = root / "ws", root / "lib.git"
    _sh(root, "git", "init", "-q", "-b", "main", str(root / "lib"))
    (root / "lib" / "l.txt").write_text("l\n")
    _sh(root / "lib", "git", "add", ".")
    _sh(root / "lib", "git", "commit", "-qm", "lib")
    _sh(root, "git", "clone", "-q", "--bare", str(root / "lib"), str(lib))
    shutil.rmtree(root / "lib")
    _sh(ws, "git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "mod")
    _sh(ws, "git", "commit", "-qm", "submodule", "--", ".gitmodules", "mod")
    _sh(ws, "git", "clone", "-q", str(lib), "nested")
    for hooks in (ws / "nested" / ".git" / "hooks", ws / ".git" / "modules" / "mod" / "hooks"):
        (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")


def _digest(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_dir():
        return f"dir:{oct(path.stat().st_mode)}"
    if not path.exists():
        return "-"
    if not path.is_file():
        return f"special:{oct(path.stat().st_mode)}"
    data = path.read_bytes()
    return f"{oct(path.stat().st_mode)}:{hashlib.sha256(data).hexdigest()[:16]}"


def _walk(folder: Path, skip: Path | None = None) -> dict[str, str]:
    found: dict[str, str] = {str(folder): _digest(folder)}
    if folder.is_dir() and not folder.is_symlink():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [name for name in dirnames if Path(dirpath, name) != skip]
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                found[str(path)] = _digest(path)
    return found


def _refs(repo: Path) -> str:
    """Branches and tags as git reads them (loose or packed), or why they cannot be read."""
    done = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"],
        cwd=repo, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return done.stdout if done.returncode == 0 else f"unreadable: {done.returncode}"


@dataclass(frozen=True)
class Tree:
    root: Path
    template: Path

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    def fill(self, text: str) -> str:
        r = self.root
        return (
            text.replace("{WS}", str(r / "ws"))
            .replace("{OUT}", str(r / "out"))
            .replace("{HOME}", str(r / "home"))
            .replace("{RUN}", str(r / "run"))
            .replace("{DATA}", str(r / "data"))
            .replace("{REMOTE}", str(r / "remote.git"))
            .replace("{TMP}", str(r / "tmp"))
            .replace("{{", "{")
            .replace("}}", "}")
        )

    def reset(self) -> None:
        if self.root.exists():
            subprocess.run(["chmod", "-R", "u+rwx", str(self.root)], check=False, timeout=30)
            shutil.rmtree(self.root)
        shutil.copytree(self.template, self.root, symlinks=True)

    def state(self) -> dict[str, str]:
        """Everything an attack may not change (see the module doc)."""
        r, ws = self.root, self.ws
        state: dict[str, str] = {}
        for folder in (r / "out", r / "home", r / "data", r / "run"):
            # write-guard's store: the host writes it before a guarded command runs (the
            # command cannot: test_write_guard_objects shows it hidden and kept).
            state.update(_walk(folder, skip=r / "data" / "write-guard"))
        module = ws / ".git" / "modules" / "mod"
        for path in (ws / ".git" / "config", ws / ".git" / "hooks", ws / ".claude",
                     ws / "hookchain.toml", ws / ".hookchain", ws / "nested" / ".git" / "config",
                     ws / "nested" / ".git" / "hooks", module / "config", module / "hooks",
                     ws / "mod" / ".git"):  # fmt: skip
            state.update(_walk(path))
        for repo in (ws, r / "remote.git"):
            state[f"refs:{repo.name}"] = _refs(repo)
        state["work:a.txt"] = _digest(ws / "a.txt")
        state["work:b.txt"] = _digest(ws / "b.txt")
        state["work:notes.txt"] = _digest(ws / "notes.txt")
        return state

    def held(self) -> dict[str, str]:
        """What write-guard keeps for the workspace: its store's packs and refs, and the
        repository's `refs/write-guard` (snapshot refs and the repository's id)."""
        kept: dict[str, str] = {}
        for git_dir in (self.root / "data" / "write-guard" / "git").glob("*.git"):
            for folder in (git_dir / "objects" / "pack", git_dir / "refs"):
                kept.update(_walk(folder))
        kept.update(_walk(self.ws / ".git" / "refs" / "write-guard"))
        # Files only: a folder's digest is its mode, and one not there yet is made by the
        # host (or by bwrap, as the empty read-only mount point of a missing one).
        return {p: digest for p, digest in kept.items() if digest != "-" and digest[:4] != "dir:"}

    def lost(self, held: dict[str, str]) -> list[str]:
        """What of `held` (taken before a command) is gone or changed: additions are the
        host's (a snapshot's copy, possibly finishing in the background past its budget)."""
        now = self.held()
        return sorted(path for path, digest in held.items() if now.get(path) != digest)

    def harm(self, before: dict[str, str]) -> list[str]:
        """What changed in `state()` since `before`, but lost work that `hookchain restore`
        brings back."""
        after = self.state()
        changed = [key for key in before.keys() | after.keys() if before.get(key) != after.get(key)]
        work = {"work:a.txt", "work:b.txt", "work:notes.txt"}
        if set(changed) <= work and changed and self.recoverable(set(changed)):
            return []
        return sorted(changed)

    def recoverable(self, changed: set[str] | None = None) -> bool:
        """Whether one of write-guard's snapshots holds the uncommitted change of a.txt and,
        when `changed` names it, the untracked notes.txt."""
        try:
            refs = _sh(self.ws, "git", "for-each-ref", "--format=%(refname)", "refs/write-guard/")
        except AssertionError:
            return False
        wanted = {":a.txt": DIRTY}
        if changed is not None and "work:notes.txt" in changed:
            wanted["^3:notes.txt"] = UNTRACKED
        for ref in refs.split():
            held = 0
            for name, content in wanted.items():
                shown = subprocess.run(
                    ["git", "show", ref + name], cwd=self.ws, capture_output=True, text=True,
                    timeout=30, check=False,
                )  # fmt: skip
                held += shown.stdout == content
            if held == len(wanted):
                return True
        return False

    def run(self, command: str, stdin: str = "", env: dict[str, str] | None = None) -> Ran:
        """Run `command` with bash inside the jail (the tree writable, nothing else)."""
        assert BWRAP is not None
        r = str(self.root)
        argv = [
            BWRAP, "--die-with-parent", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/",
            "--dev-bind", "/dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm",
            "--tmpfs", "/tmp", "--bind", r, r,
            "--clearenv", "--setenv", "PATH", os.environ.get("PATH", "/usr/bin:/bin"),
            "--setenv", "HOME", f"{r}/home", "--setenv", "TMPDIR", f"{r}/tmp",
            "--setenv", "LANG", "C.UTF-8", "--setenv", "GUARD_TEST_VAR", "v a l",
            "--setenv", "HOOKCHAIN_DATA_DIR", f"{r}/data",
            "--chdir", f"{r}/ws",
        ]  # fmt: skip
        for key, value in {**GIT_ENV, **(env or {})}.items():
            argv += ["--setenv", key, value]
        argv += ["--", "/bin/bash", "-c", command]
        try:
            done = subprocess.run(
                argv, input=stdin, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return Ran(-1, "", "timeout")
        return Ran(done.returncode, done.stdout, done.stderr)


@contextlib.contextmanager
def running_claude(
    config: Path, session_id: str, flags: Sequence[str] = (), record: bool = True
) -> Iterator[int]:
    """A process standing for the session's Claude Code, started with `flags` on its command
    line, and (`record`) its record in `config`/sessions as Claude Code 2.1.197 writes it; its
    pid. It waits on its stdin and ends with the block."""
    code = "import sys; sys.stdin.read()"
    process = subprocess.Popen([sys.executable, "-c", code, *flags], stdin=subprocess.PIPE)
    path = config / "sessions" / f"{process.pid}.json"
    try:
        if record:
            with open(f"/proc/{process.pid}/stat", encoding="utf-8") as handle:
                started = handle.read().rpartition(")")[2].split()[19]
            path.parent.mkdir(parents=True, exist_ok=True)
            fields = {"pid": process.pid, "sessionId": session_id, "procStart": started}
            path.write_text(json.dumps({**fields, "cwd": "/", "kind": "interactive"}))
        yield process.pid
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Ran:
    rc: int
    stdout: str
    stderr: str


def restore_the_snapshot(tree: Tree) -> Ran:
    """The person's `hookchain restore` (run in the jail): the list holds one snapshot, which
    is then brought back."""
    listed = tree.run(f"{HOOKCHAIN} restore")
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert listed.rc == 0 and len(names) == 1, listed
    return tree.run(f"{HOOKCHAIN} restore {names[0]}")


@dataclass(frozen=True)
class Verdict:
    denied: str | None
    command: str | None
    updated: dict[str, object] | None


async def dispatch_bash(
    tree: Tree,
    command: str,
    terminal: Callable[[ToolCall], Awaitable[ToolResult]],
    project: Path | None = None,
    **options: object,
) -> tuple[ToolResult, list[Action]]:
    """One Bash call through write-guard loaded in a real host, `terminal` standing for the
    harness; the result and the dispatch's actions. `project`: the workspace (the tree's `ws`
    unless named)."""
    r = tree.root
    ws = project or tree.ws
    settings = {
        "extra_writable_roots": [str(r / "tmp"), "/dev/null"],
        "protected_paths": [str(r / "data")],
        **options,
    }
    # The harness's TMPDIR, as in the jail: a root, so the session's own is mounted on it.
    env = {"HOME": str(r / "home"), "CLAUDE_PROJECT_DIR": str(ws), "TMPDIR": str(r / "tmp")}
    async with Host(
        plugins=[write_guard], entry_points=False, store="memory://", env=env,
        options={"write-guard": settings},
    ) as host:  # fmt: skip
        await host.dispatch(SessionStart(session_id="s", cwd=str(ws)))
        call = ToolCall(session_id="s", tool_use_id="t", tool="Bash", input={"command": command})
        outcome = await host.dispatch(call, terminal=terminal)
    result = outcome.result
    assert isinstance(result, ToolResult)
    return result, list(outcome.actions)


async def guard_decides(
    tree: Tree, command: str, project: Path | None = None, **options: object
) -> Verdict:
    """The decision of write-guard, loaded in a real host, for one Bash call; `command` is
    what the harness would then run (the tool input that reached the terminal)."""
    reached: list[str] = []

    async def terminal(event: ToolCall) -> ToolResult:
        reached.append(str(event.input["command"]))
        return ToolResult(output="ran")

    result, _actions = await dispatch_bash(tree, command, terminal, project, **options)
    if result.denial is not None:
        return Verdict(result.denial.reason, None, None)
    updated = dict(result.updated_input) if result.updated_input is not None else None
    return Verdict(None, reached[0] if reached else None, updated)


async def attack_does_no_harm(tree: Tree, attack: Attack, options: dict[str, object]) -> None:
    """Prove the attack harmful unguarded (for an "effect" proof), then check it does no harm
    the way write-guard with `options` lets it run (or is refused, for a "deny" proof)."""
    command = tree.fill(attack.command)
    if attack.proof == "effect":
        before, held = tree.state(), tree.held()
        tree.run(command)
        harmed = tree.harm(before) or tree.lost(held)
        assert harmed, f"the attack does no harm even unguarded: {command!r}"
        tree.reset()
    verdict = await guard_decides(tree, command, **options)
    if attack.proof == "deny":
        assert verdict.denied is not None, f"not refused: {command!r}"
        return
    if verdict.denied is not None:
        return
    assert verdict.command is not None
    before, held = tree.state(), tree.held()
    ran = tree.run(verdict.command)
    assert not tree.harm(before), (command, ran)
    assert not tree.lost(held), (command, ran, tree.lost(held))
