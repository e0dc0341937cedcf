"""`hookchain approve "<command>"`: the person grants one use of one exact dangerous git command."""

from __future__ import annotations

import time
from typing import Annotated, Any

import anyio
import typer
from framework import Store, hookimpl, load_settings, open_backend

from write_guard._approvals import approval_key, canonical, new_approval
from write_guard._register import PLUGIN, RECORD_TTL_S, _gated


async def approve_in(store: Store, command: str, now_ms: int) -> dict[str, Any]:
    """Write a one-shot approval of `command` into the plugin's namespace of `store`."""
    record = new_approval(command, now_ms, "cli")
    await store.namespace(PLUGIN).set(approval_key(command), record.model_dump(), ttl=RECORD_TTL_S)
    return record.model_dump()


async def _approve_configured(command: str) -> dict[str, Any]:
    backend = open_backend(load_settings().store)
    try:
        return await approve_in(Store(backend), command, int(time.time() * 1000))
    finally:
        await backend.aclose()


def approve(
    command: Annotated[str, typer.Argument(help="the exact command, as the agent will run it")],
) -> None:
    """Approve one run of a dangerous git command held by write-guard (valid 5 minutes)."""
    exact = canonical(command)
    if not exact:
        typer.echo("write-guard: refusing an empty command", err=True)
        raise typer.Exit(2)
    if not _gated(exact):
        typer.echo("write-guard: refusing: the git gate does not hold this command", err=True)
        raise typer.Exit(2)
    record = anyio.run(_approve_configured, exact)
    typer.echo(
        f"approved once, until the approval expires in 5 minutes: {exact}  (id {record['id']})"
    )


@hookimpl
def register_cli(app: Any) -> None:
    app.command("approve")(approve)
