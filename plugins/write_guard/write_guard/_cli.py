"""`hookchain approve CODE` and `hookchain restore`: what only the person runs."""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Annotated, Any

import anyio
import typer
from framework import Host, Store, hookimpl, load_settings, open_backend

from write_guard import _claude_sandbox as claude_sandbox
from write_guard import _snapshot, _status
from write_guard._approvals import approval_key, canonical, code_key, new_approval
from write_guard._options import Options
from write_guard._runtime import PLUGIN, RECORD_TTL_S, Guard


async def approve_in(store: Store, command: str, now_ms: int) -> dict[str, Any]:
    """Write a one-shot approval of `command` into the plugin's namespace of `store`."""
    record = new_approval(command, now_ms, "cli")
    await store.namespace(PLUGIN).set(approval_key(command), record.model_dump(), ttl=RECORD_TTL_S)
    return record.model_dump()


async def approve_code_in(store: Store, code: str, now_ms: int) -> dict[str, Any] | None:
    """Approve the command held under the one-time `code` (shown only to the person); the code
    is used up. None when no held command has this code (wrong, used or expired)."""
    plugin = store.namespace(PLUGIN)
    held = await plugin.get(code_key(code))
    if not isinstance(held, dict) or not isinstance(held.get("command"), str):
        return None
    await plugin.delete(code_key(code))
    return await approve_in(store, canonical(held["command"]), now_ms)


async def _approve_configured(code: str) -> dict[str, Any] | None:
    backend = open_backend(load_settings().store)
    try:
        return await approve_code_in(Store(backend), code, int(time.time() * 1000))
    finally:
        await backend.aclose()


def approve(
    code: Annotated[str, typer.Argument(help="the one-time code write-guard showed you")],
) -> None:
    """Approve one run of the git command write-guard held under CODE (valid 5 minutes).

    The code is shown to you alone (never to the model) when a command is held."""
    if not code.strip():
        typer.echo("write-guard: refusing an empty code", err=True)
        raise typer.Exit(2)
    record = anyio.run(_approve_configured, code)
    if record is None:
        typer.echo(
            "write-guard: no held command has this code (mistyped, used, or older than 30 "
            "minutes); retry the command to get a new one",
            err=True,
        )
        raise typer.Exit(2)
    typer.echo(f"approved once, for 5 minutes: {record['command']}  (id {record['id']})")


def restore(
    snapshot: Annotated[
        str | None, typer.Argument(help="the snapshot to bring back (default: list them)")
    ] = None,
    repo: Annotated[str, typer.Option(help="the work tree")] = ".",
    history: Annotated[
        bool,
        typer.Option(
            "--history",
            help="only bring back what the repository lost of write-guard's copy (objects, "
            "branches, tags, HEAD, the index)",
        ),
    ] = False,
) -> None:
    """List the work tree states write-guard recorded before shell commands, or bring one back
    (`git stash apply` of it: merged into the current tree, refused over newer changes; the
    untracked files it holds that are missing are put back, those made again are kept). A
    copy of every snapshot and of HEAD's history is kept outside the repository: a state
    comes back even after `.git/objects` or `.git/refs` were deleted (what the repository
    lost of it is put back first)."""
    where = os.path.abspath(repo)
    if history and snapshot is not None:
        typer.echo(
            "write-guard: give a snapshot or --history, not both (restore SNAPSHOT brings "
            "the history back first)",
            err=True,
        )
        raise typer.Exit(2)
    try:
        if history:
            recovered = _snapshot.recover(where)
            _report(recovered)
            if not recovered.stored:
                typer.echo("no write-guard store for this repository: nothing to bring back")
                _other_stores(where)
            elif recovered == _snapshot.Recovered(0, (), False, False):
                typer.echo("nothing was missing: the repository holds all of write-guard's store")
            return
        if snapshot is None:
            found = _snapshot.snapshots(where)
            if not found:
                typer.echo("no write-guard snapshots of this work tree")
            for snap in found:
                typer.echo(f"{snap.name}  {snap.subject}")
            _other_stores(where)
            return
        done = _snapshot.restore(where, snapshot)
    except (LookupError, RuntimeError, OSError) as error:
        typer.echo(f"write-guard: {error}", err=True)
        raise typer.Exit(2) from None
    _report(done.recovered)
    typer.echo(
        f"restored {done.snapshot.ref} into {where}"
        + (f" ({len(done.untracked)} untracked files put back)" if done.untracked else "")
    )
    for name in done.kept:
        typer.echo(f"write-guard: kept {name} as it is now (made again since)", err=True)


def _other_stores(where: str) -> None:
    """Name the stores write-guard keeps for this path that are not this repository's: what
    is there is never offered as this repository's work, but may be wanted."""
    _top, _git_dir, common = _snapshot.locate(where)
    for store in _snapshot.other_stores(common):
        typer.echo(
            f"write-guard's store at {store} is not this repository's (one deleted and made "
            "again at this path, or from before write-guard told repositories apart): its "
            f"states are not offered here; `git --git-dir={store} for-each-ref` lists them"
        )


def _report(done: _snapshot.Recovered) -> None:
    """What `recover` brought back, if anything."""
    if done.objects:
        typer.echo(f"put back {done.objects} objects the repository had lost")
    if done.head:
        typer.echo("made HEAD again (it was missing)")
    for ref in done.refs:
        typer.echo(f"made {ref} again (it was missing)")
    if done.index:
        typer.echo("read the index again from HEAD (it was missing)")
    for ref, sha in done.absent:
        typer.echo(f"write-guard's store holds {ref}, which the repository lacks (left so: "
                   f"`git update-ref {ref} {sha}` makes it again)")  # fmt: skip


def sandbox_settings(
    workspace: Annotated[str, typer.Option(help="the workspace (Claude Code's project)")] = ".",
    show: Annotated[bool, typer.Option("--print", help="print them, write nothing")] = False,
) -> None:
    """Write Claude Code's own sandbox settings (`sandbox` in .claude/settings.json) from
    write-guard's policy: what makes shell commands sandboxed hold in every permission mode.

    `hookchain install` writes the same into the file it installs in (and `uninstall` takes
    them out); this writes them into .claude/settings.json by itself. Claude Code then checks
    its permission rules on each command as written and runs it in bubblewrap (it needs bwrap
    and socat); write-guard no longer rewrites the command."""
    root = os.path.abspath(workspace)
    options = _project_options(root)
    home, config_dir = os.environ.get("HOME"), os.environ.get("CLAUDE_CONFIG_DIR")
    value = Guard(options).claude_expected(root, home, config_dir)
    if show:
        typer.echo(json.dumps({"sandbox": value}, indent=2))
        return
    try:
        path = claude_sandbox.write_sandbox_settings(root, value)
    except (OSError, ValueError) as error:
        typer.echo(f"write-guard: {error}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote Claude Code's sandbox settings into {path}")
    missing = _status.missing_tools()
    if missing:
        typer.echo(
            f"write-guard: {' and '.join(missing)} not found: Claude Code will refuse to start "
            "here until they are installed (apt-get install bubblewrap socat)",
            err=True,
        )


def _project_options(root: str) -> Options:
    """write-guard's options as a host in the project loads them (its hookchain.toml too)."""
    # A host finds hookchain.toml from the folder it starts in: the project's, not ours.
    with contextlib.chdir(root):
        host = Host(store="memory://", entry_points=False, plugins=[_plugin_module()])
        host.load()
    for record in host.plugins:
        if record.name == PLUGIN and record.status == "loaded":
            options: Options = record.options
            return options
    why = "; ".join(f"{r.status}: {r.error or 'see hookchain plugins'}" for r in host.plugins)
    typer.echo(f"write-guard: not loaded in {root} ({why})", err=True)
    raise typer.Exit(2)


def _plugin_module() -> Any:
    import write_guard

    return write_guard


@hookimpl
def register_cli(app: Any) -> None:
    app.command("approve")(approve)
    app.command("restore")(restore)
    app.command("sandbox-settings")(sandbox_settings)
