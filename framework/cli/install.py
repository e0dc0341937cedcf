"""`hookchain plugins install / uninstall`: pip (or uv) run on hookchain's own interpreter.

A hookchain installed with pipx or `uv tool` lives in an environment of its own; a plugin
installed anywhere else is invisible to it. Like `llm install`, these commands put plugins
where the running hookchain looks for them."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Sequence

import typer

from framework.core.loading import Candidate
from framework.core.settings import UserError


def _installer() -> list[str]:
    """pip of this interpreter, else uv aimed at it (a `uv tool` environment has no pip)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    uv = shutil.which("uv")
    if uv is not None:
        return [uv, "pip"]
    raise UserError(
        f"neither pip nor uv can install into {sys.executable}; install pip there "
        f"({sys.executable} -m ensurepip) or put uv on PATH"
    )


def _run(command: list[str]) -> int:
    typer.echo(f"hookchain: running {' '.join(command)}", err=True)
    try:
        return subprocess.run(command, check=False).returncode
    except OSError as error:
        raise UserError(f"cannot run {command[0]}: {error}") from None


def _python_flag(base: list[str]) -> list[str]:
    return ["--python", sys.executable] if base[0] != sys.executable else []


def install(names: Sequence[str], *, upgrade: bool = False, editable: bool = False) -> int:
    """Install distributions (names, wheels, folders) into hookchain's environment."""
    base = _installer()
    flags = ["--upgrade"] if upgrade else []
    targets = [part for name in names for part in (["-e", name] if editable else [name])]
    return _run([*base, "install", *_python_flag(base), *flags, *targets])


def distributions(names: Sequence[str], candidates: Sequence[Candidate]) -> list[str]:
    """Each name as a distribution: a plugin name finds the distribution that provides it."""
    by_plugin = {c.name: c.distribution for c in candidates if c.distribution}
    return [by_plugin.get(name, name) for name in names]


def uninstall(names: Sequence[str], candidates: Sequence[Candidate]) -> int:
    """Uninstall plugins (by plugin or distribution name) from hookchain's environment."""
    known = {c.distribution for c in candidates if c.distribution}
    wanted = distributions(names, candidates)
    unknown = [name for name, dist in zip(names, wanted, strict=True) if dist not in known]
    if unknown:
        raise UserError(
            f"no installed plugin or plugin distribution named {', '.join(map(repr, unknown))}; "
            f"installed: {', '.join(sorted(known)) or 'none'}"
        )
    base = _installer()
    yes = ["-y"] if base[0] == sys.executable else []
    return _run([*base, "uninstall", *_python_flag(base), *yes, *wanted])
