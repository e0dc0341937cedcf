"""Many projects on one warm host: each session is served by the `Host` of its own project.

The warm host is one per user, but what a session must be served with is its project's: the
nearest `hookchain.toml`, the `HOOKCHAIN_*` and `<PLUGIN>_*` variables and `CLAUDE_PROJECT_DIR`
of the Claude Code process that runs the hook. So the hook client forwards its cwd and
environment with every call, and this module keeps one `Host` (with its own `ClaudeBridge`) per
project root, built as if in a process started there with that environment.

A project is found from, in order: the forwarded `CLAUDE_PROJECT_DIR`, the payload's `cwd`, the
hook process's cwd; from that folder, the nearest one holding `.git` or `hookchain.toml` is the
root. A session stays with the project of its first event (a `cd` does not move it). Before each
event the project's fingerprint (its config file's identity and content stamp, and the variables
hookchain and its plugins read) is compared with the one its host was built from: when it
changed, a new host serves from this event on, and the old one ends once its suspended tool calls
have their results.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from framework.claude_code import mapping as cmap
from framework.claude_code.bridge import ClaudeBridge
from framework.claude_code.project_plugins import status_lines
from framework.core.host import Host
from framework.core.loading import load_failures
from framework.core.names import env_prefix
from framework.core.settings import CONFIG_FILE, SettingsError, load_settings, read_config

_log = structlog.get_logger("hookchain.projects")

PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"
ROOT_MARKERS = (".git", "hookchain.toml")
OPEN_RETRY_S = 5.0
"""A project whose host cannot be built is answered with that error, not rebuilt, for this long."""
SESSION_MEMORY = 4096
RETIRE_AFTER_S = 600.0
"""A host of a configuration no longer used, with no suspended call, ends after this long."""
HOST_LEVEL_VARIABLES = frozenset(
    {"HOOKCHAIN_RUNTIME_DIR", "HOOKCHAIN_IDLE_EXIT", "HOOKCHAIN_SUSPEND_TIMEOUT"}
)
"""Read once by the warm process (it is one per runtime dir); every other `HOOKCHAIN_*` is a
project's own."""


@dataclass(frozen=True, slots=True)
class CallContext:
    """What a hook call says of where it runs: the hook process's cwd and environment."""

    cwd: str | None = None
    env: Mapping[str, str] | None = None

    @classmethod
    def parse(cls, block: bytes) -> CallContext:
        """The client's context block: cwd, then `NAME=value` entries, NUL-separated.

        A session sends the same block with every call: the parsed one is reused."""
        return _parse_context(block)

    @classmethod
    def _parse(cls, block: bytes) -> CallContext:
        if not block:
            return cls()
        cwd, *entries = block.split(b"\0")
        env: dict[str, str] = {}
        for entry in entries:
            name, sep, value = entry.partition(b"=")
            if sep:
                env[name.decode(errors="replace")] = value.decode(errors="surrogateescape")
        return cls(cwd=cwd.decode(errors="surrogateescape") or None, env=env)


@functools.lru_cache(maxsize=64)
def _parse_context(block: bytes) -> CallContext:
    return CallContext._parse(block)


def project_root(start: str) -> str:
    """The nearest folder from `start` upwards holding `.git` or `hookchain.toml`; else `start`."""
    here = Path(os.path.abspath(start))
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return str(folder)
    return str(here)


@contextlib.contextmanager
def environ_of(env: Mapping[str, str]) -> Iterator[None]:
    """`os.environ` is `env` inside: settings and plugin options read the project's variables.

    Used only around synchronous host building, so no other task of the event loop runs
    meanwhile and sees it."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _config_stamp(path: Path | None) -> str:
    if path is None:
        return "-"
    try:
        info = path.stat()
    except OSError:
        return f"{path}:missing"
    return f"{path}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"


@dataclass(slots=True)
class Project:
    """One project root with one configuration, served by its own host and bridge."""

    root: str
    env: dict[str, str]
    fingerprint: str
    config_path: Path | None
    host: Host | None = None
    bridge: ClaudeBridge | None = None
    error: str | None = None
    error_at: float = 0.0
    prefixes: tuple[str, ...] = ("HOOKCHAIN_",)
    sessions: set[str] = field(default_factory=set)
    last_used: float = field(default_factory=time.monotonic)
    stop: anyio.Event = field(default_factory=anyio.Event)

    @property
    def key(self) -> tuple[str, str]:
        return self.root, self.fingerprint


class ProjectRouter:
    """Finds each call's project, builds its host on first use, a new one when it changes."""

    def __init__(
        self,
        task_group: TaskGroup,
        *,
        base_env: Mapping[str, str],
        suspend_timeout: float,
        fixed_host: Host | None = None,
        retire_after_s: float = RETIRE_AFTER_S,
        runtime_dir: str | None = None,
    ) -> None:
        self._task_group = task_group
        self.runtime_dir = runtime_dir
        # What the warm process was started with, minus everything a project sets for itself.
        self.base_env = {
            k: v
            for k, v in base_env.items()
            if k in HOST_LEVEL_VARIABLES or not (k.startswith("HOOKCHAIN_") or k == PROJECT_DIR_ENV)
        }
        self.suspend_timeout = suspend_timeout
        self.retire_after_s = retire_after_s
        self.projects: dict[tuple[str, str], Project] = {}
        self._latest: dict[str, Project] = {}
        """Each root's project of its latest command-client call."""
        self._session_roots: dict[str, str] = {}
        self._session_projects: dict[str, Project] = {}
        self._building = anyio.Lock()
        self._fixed: ClaudeBridge | None = None
        if fixed_host is not None:
            self._fixed = ClaudeBridge(fixed_host, task_group, suspend_timeout=suspend_timeout)

    # -- what the server and `hookchain status` read --

    @property
    def fixed_bridge(self) -> ClaudeBridge | None:
        return self._fixed

    def bridges(self) -> list[ClaudeBridge]:
        found = [p.bridge for p in self.projects.values() if p.bridge is not None]
        return [self._fixed, *found] if self._fixed is not None else found

    @property
    def suspended_count(self) -> int:
        return sum(bridge.suspended_count for bridge in self.bridges())

    def status(self) -> dict[str, Any]:
        """Totals over every project, and each project with the config it is served with."""
        counted = [b.status() for b in self.bridges()]
        totals: dict[str, Any] = {key: sum(c[key] for c in counted) for key in _TOTALS}
        plugins: dict[str, dict[str, Any]] = {}
        for entry in (e for c in counted for e in c["plugins"]):
            plugins.setdefault(entry["name"], entry)
        totals["plugins"] = list(plugins.values())
        totals["projects"] = [_project_status(p) for p in self.projects.values()]
        return totals

    # -- one call --

    async def answer(
        self, raw: bytes, event_hint: str | None, context: CallContext
    ) -> cmap.HookAnswer:
        """The answer to one hook call of the command client."""
        try:
            payload = cmap.parse_payload(raw, event_hint or None)
        except cmap.PayloadError as error:
            bridge = self._fixed or next(iter(self.bridges()), None)
            if bridge is not None:
                bridge.served += 1
                bridge.payload_errors += 1
            return cmap.payload_error_answer(error)
        return await self.answer_payload(payload, context)

    def bound(self, context: CallContext) -> _Bound:
        """This router as one call's answerer: its payloads are served with `context`."""
        return _Bound(self, context)

    async def answer_payload(
        self, payload: dict[str, Any], context: CallContext | None = None
    ) -> cmap.HookAnswer:
        """The answer to a parsed payload; http hooks come without context (see `_env_for`)."""
        if self._fixed is not None:
            return await self._fixed.answer_payload(payload)
        project = await self._project(payload, context)
        bridge = self._holder(payload, project)
        if bridge is None:
            return _project_failure(payload, project)
        answer = await bridge.answer_payload(payload)
        if payload["hook_event_name"] == "SessionEnd":
            session_id = payload["session_id"]
            for known in self.projects.values():
                known.sessions.discard(session_id)
            self._session_roots.pop(session_id, None)
            self._session_projects.pop(session_id, None)
        return answer

    def _holder(self, payload: Mapping[str, Any], project: Project) -> ClaudeBridge | None:
        """A tool result goes to the host that holds its call, even one whose config changed
        since: its chain resumes where it was, rather than running again in the new host."""
        if payload["hook_event_name"] in ("PostToolUse", "PostToolUseFailure"):
            try:
                key = cmap.call_key(payload)
            except cmap.PayloadError:
                return project.bridge
            for other in self.projects.values():
                if other.root == project.root and other.bridge and other.bridge.holds_call(key):
                    return other.bridge
        return project.bridge

    def _root_of(self, payload: Mapping[str, Any], context: CallContext) -> str:
        session_id: str = payload["session_id"]
        known = self._session_roots.get(session_id)
        if known is not None:
            return known
        env = context.env or {}
        cwd = payload.get("cwd")
        given = env.get(PROJECT_DIR_ENV)
        start = given or (cwd if isinstance(cwd, str) and cwd else None) or context.cwd
        root = os.path.abspath(given) if given else project_root(start or os.getcwd())
        self._session_roots[session_id] = root
        _trim(self._session_roots)
        return root

    async def _project(self, payload: Mapping[str, Any], context: CallContext | None) -> Project:
        session_id: str = payload["session_id"]
        if context is None or context.env is None:
            # An http hook: no environment comes with it. The session's project (its
            # SessionStart hook runs on the command client), else its root's latest one.
            known = self._session_projects.get(session_id)
            root = self._root_of(payload, context or CallContext())
            latest = known or self._latest.get(root)
            env = dict(latest.env) if latest is not None else dict(self.base_env)
        else:
            root = self._root_of(payload, context)
            env = dict(context.env)
        env.setdefault(PROJECT_DIR_ENV, root)
        config_path = _config_path(root, env)
        project = self._find(root, env, config_path)
        if project is None or (
            project.bridge is None and time.monotonic() - project.error_at >= OPEN_RETRY_S
        ):
            async with self._building:  # one build at a time: parallel first calls share it
                project = self._find(root, env, config_path)
                if project is None or (
                    project.bridge is None and time.monotonic() - project.error_at >= OPEN_RETRY_S
                ):
                    if project is not None:
                        del self.projects[project.key]
                    project = project or Project(root, env, "", config_path)
                    await self._build(project)
                    self.projects[project.key] = project  # the key now covers plugin variables
                    self._retire_idle(project)
        project.sessions.add(session_id)
        project.last_used = time.monotonic()
        self._latest[root] = project
        self._session_projects[session_id] = project
        _trim(self._session_projects)
        return project

    def _find(self, root: str, env: Mapping[str, str], config_path: Path | None) -> Project | None:
        latest = self._latest.get(root)
        prefixes = latest.prefixes if latest is not None else ("HOOKCHAIN_",)
        return self.projects.get((root, _fingerprint(env, config_path, prefixes)))

    async def _build(self, project: Project) -> None:
        """Open the project's host in a task of its own, which also closes it (anyio wants a
        task group left by the task that entered it)."""
        opened = anyio.Event()
        failure: list[Exception] = []
        host: Host | None = None
        try:
            host = _new_host(project, self.runtime_dir)
        except Exception as error:
            failure.append(error)
        else:
            project.stop = anyio.Event()
            self._task_group.start_soon(_keep_open, host, opened, failure, project.stop)
            await opened.wait()
            project.prefixes = ("HOOKCHAIN_", *(env_prefix(p.name) for p in host.loaded()))
        # The variables plugins read are known only now: the fingerprint must cover them.
        project.fingerprint = _fingerprint(project.env, project.config_path, project.prefixes)
        if failure or host is None:
            project.error = _build_error(project, failure[0])
            project.error_at = time.monotonic()
            _log.warning("project not served", root=project.root, error=project.error)
            return
        project.error = None
        project.host = host
        project.bridge = ClaudeBridge(host, self._task_group, suspend_timeout=self.suspend_timeout)

    def _retire_idle(self, current: Project) -> None:
        """End hosts of this root's older configurations once nothing runs in them."""
        now = time.monotonic()
        for key, other in list(self.projects.items()):
            if other is current or other.root != current.root:
                continue
            busy = other.bridge is not None and other.bridge.suspended_count
            if not busy and now - other.last_used >= self.retire_after_s:
                del self.projects[key]
                other.stop.set()

    def retire_stale(self) -> None:
        """Called now and then: ends hosts unused for `retire_after_s` with no suspended call."""
        now = time.monotonic()
        for key, project in list(self.projects.items()):
            busy = project.bridge is not None and project.bridge.suspended_count
            if not busy and now - project.last_used >= self.retire_after_s:
                del self.projects[key]
                if self._latest.get(project.root) is project:
                    del self._latest[project.root]
                project.stop.set()

    def close_all(self) -> None:
        for project in self.projects.values():
            project.stop.set()


_TOTALS = (
    "sessions",
    "events_served",
    "suspended_calls",
    "replayed_calls",
    "cancelled_calls",
    "payload_errors",
    "dispatch_errors",
    "handler_failures",
)


def _trim(mapping: dict[str, Any]) -> None:
    while len(mapping) > SESSION_MEMORY:
        mapping.pop(next(iter(mapping)))


def _config_path(root: str, env: Mapping[str, str]) -> Path | None:
    """The project's hookchain.toml: its HOOKCHAIN_CONFIG, else the nearest from its root up."""
    override = env.get("HOOKCHAIN_CONFIG")
    if override:
        return Path(root, override)  # an absolute override stays itself
    # os.path, not pathlib: this runs before every event, and pathlib costs several times more.
    folder = root
    while True:
        candidate = os.path.join(folder, CONFIG_FILE)
        if os.path.isfile(candidate):
            return Path(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _project_status(project: Project) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "root": project.root,
        "config": None if project.config_path is None else str(project.config_path),
        "fingerprint": project.fingerprint[:12],
        "sessions": len(project.sessions),
        "idle_s": round(time.monotonic() - project.last_used, 1),
        "error": project.error,
    }
    if project.host is not None:
        entry["store"] = _redacted(project.host.settings.store)
        entry["plugins"] = [p.name for p in project.host.loaded()]
        entry["not_loaded"] = [
            {"name": record.name, "error": record.error or record.status}
            for record in load_failures(project.host.plugins)
        ]
        entry["plugin_status"] = status_lines(project.host, project.root)
    return entry


class ClaudeHost(Host):
    """A project's host under the warm process: its runtime dir (socket, lock, log) is one of
    the host's own files, which guards keep the agent from changing."""

    runtime_dir: str | None = None

    def owned_files(self) -> tuple[str, ...]:
        owned = super().owned_files()
        if self.runtime_dir is None:
            return owned
        return (*owned, os.path.abspath(self.runtime_dir))


def _new_host(project: Project, runtime_dir: str | None = None) -> Host:
    """The project's host, built as in a process started in its root with its environment."""
    modules = project.env.get("HOOKCHAIN_PLUGIN_MODULES", "")
    with environ_of(project.env):
        config = read_config(project.config_path)
        settings = load_settings(config)
        plugins = load_plugin_modules([m.strip() for m in modules.split(",") if m.strip()])
        host = ClaudeHost(plugins=plugins, config=config, settings=settings, env=project.env)
        host.config_path = project.config_path
        host.runtime_dir = runtime_dir
        host.load()  # options read the project's <PLUGIN>_* variables here
    return host


def load_plugin_modules(names: Sequence[str]) -> list[Any]:
    return [import_module(name) for name in names]


async def _keep_open(
    host: Host, opened: anyio.Event, failure: list[Exception], stop: anyio.Event
) -> None:
    try:
        await host.open()
    except Exception as error:
        failure.append(error)
        opened.set()
        return
    opened.set()
    try:
        await stop.wait()
    finally:
        # Not shielded: the host's task group was entered outside any scope opened here.
        try:
            await host.aclose()
        except Exception as error:
            _log.warning("project host did not close cleanly", error_type=type(error).__name__)


def _fingerprint(env: Mapping[str, str], config: Path | None, prefixes: Sequence[str]) -> str:
    read = sorted(
        (k, v) for k, v in env.items() if k == PROJECT_DIR_ENV or k.startswith(tuple(prefixes))
    )
    digest = hashlib.sha256(_config_stamp(config).encode())
    for name, value in read:
        digest.update(b"\0" + name.encode() + b"=" + value.encode(errors="surrogateescape"))
    return digest.hexdigest()


def _redacted(url: str) -> str:
    """A store URL without its password, for status output."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        credentials, _, location = rest.rpartition("@")
        user = credentials.split(":", 1)[0]
        return f"{scheme}://{user + ':***' if user else '***'}@{location}"
    return url


def _build_error(project: Project, error: Exception) -> str:
    """Why a project's host cannot be built, naming what to fix."""
    kind = type(error).__name__
    if isinstance(error, SettingsError):
        return f"settings of {project.root}: {error}; fix them (the next hook call retries)"
    store = project.env.get("HOOKCHAIN_STORE")
    if store is None:
        with contextlib.suppress(Exception), environ_of(project.env):
            store = load_settings(read_config(project.config_path)).store
    where = f"store {_redacted(store)}" if store else "host"
    return (
        f"cannot open the {where} for {project.root}: {kind}: {error}; fix HOOKCHAIN_STORE or "
        "[hookchain] store in hookchain.toml, or start the store"
    )


def _project_failure(payload: Mapping[str, Any], project: Project) -> cmap.HookAnswer:
    """A project that cannot be served: skipped, or a tool call blocked when fail-closed."""
    return cmap.skipped_answer(payload.get("hook_event_name"), project.error or "", project.env)


@dataclass(frozen=True, slots=True)
class _Bound:
    """A router and one call's context: what another harness's adapter hands its translated
    payloads to (`framework.claude_code.native`)."""

    router: ProjectRouter
    context: CallContext

    async def answer_payload(self, payload: dict[str, Any]) -> cmap.HookAnswer:
        return await self.router.answer_payload(payload, self.context)
