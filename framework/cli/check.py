"""`hookchain check` (the conformance matrix of installed plugins) and `hookchain new-plugin`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from framework import KNOWN_CONTRACT_VERSIONS
from framework.core.hookspecs import hookimpl
from framework.core.loading import load_failures
from framework.core.settings import UserError

__all__ = ["check_plugins", "register_cli"]

_KNOWN = ", ".join(KNOWN_CONTRACT_VERSIONS)
_MARKS = {"pass": "[green]✓[/green]", "n/a": "[dim]–[/dim]", "fail": "[red]✗[/red]"}


# The kit is imported inside the commands: every hook starts this CLI, and only these need it.


Progress = Callable[[str, int, int], None]
"""Told (plugin, done, total) before each plugin's checks."""


def configured_failures(names: set[str]) -> list[dict[str, str]]:
    """The plugins that do not load with the person's settings and hookchain.toml (bad options,
    a typo'd key): the suite checks each plugin with its defaults and would pass them."""
    from framework.cli.common import host_from_options

    async def run() -> list[dict[str, str]]:
        async with host_from_options(None, "memory://", configure_log=False) as host:
            return [
                {"name": record.name, "error": record.error or "did not load"}
                for record in load_failures(host.plugins)
                if record.name in names
            ]

    return anyio.run(run)


def check_plugins(
    names: list[str], contract: str | None, progress: Progress | None = None
) -> dict[str, Any]:
    """Run the suite for every installed plugin (or the named ones): what `--json` prints."""
    from framework.testing._checks import CHECKS, CheckResult
    from framework.testing._loader import installed_plugins
    from framework.testing._suite import PluginReport, run_suite

    found = installed_plugins(names)
    missing = sorted(set(names) - {p.name for p in found} - {p.distribution for p in found})
    if missing:
        raise UserError(
            f"no installed plugin named {', '.join(missing)}; installed: "
            f"{', '.join(p.name for p in installed_plugins()) or 'none'} (see hookchain plugins)"
        )
    not_loaded = configured_failures({p.name for p in found})

    async def run() -> list[dict[str, Any]]:
        reports: list[dict[str, Any]] = []
        for done, installed in enumerate(found):
            if progress is not None:
                progress(installed.name, done, len(found))
            try:
                obj = installed.load()
            except Exception as error:
                report = PluginReport(installed.name, installed.distribution, installed.version, [])
                reason = f"cannot import {installed.value}: {type(error).__name__}: {error}"
                report.checks = {check: CheckResult("fail", reason) for check in CHECKS}
                reports.append(report.as_json())
                continue
            report = await run_suite(
                obj,
                contract=contract,
                distribution=installed.distribution,
                version=installed.version,
            )
            reports.append(report.as_json())
        return reports

    plugins = anyio.run(run)
    ok = all(plugin["ok"] for plugin in plugins) and not not_loaded
    return {"ok": ok, "plugins": plugins, "not_loaded": not_loaded}


def _silence_logs() -> None:
    """The checks provoke handler failures on purpose; the matrix reports them, not the log."""
    import logging

    import structlog

    from framework.core.logging import configure_logging

    configure_logging("error")
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))


def _print_matrix(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from framework.testing._checks import CHECKS

    console = Console()
    if not report["plugins"]:
        console.print("No plugins installed (entry-point group hookchain.plugins).")
        return
    table = Table(title="hookchain conformance")
    table.add_column("plugin", no_wrap=True)
    table.add_column("contract", no_wrap=True)
    for number in range(1, len(CHECKS) + 1):
        table.add_column(str(number), justify="center", no_wrap=True)
    reasons: list[str] = []
    for plugin in report["plugins"]:
        cells = []
        for check in CHECKS:
            verdict = plugin["checks"][check]
            cells.append(_MARKS["fail" if verdict.startswith("fail") else verdict])
            if verdict.startswith("fail"):
                reasons.append(f"{plugin['name']} · {check}: {verdict.removeprefix('fail: ')}")
        label = " ".join(filter(None, (plugin["name"], plugin["version"])))
        table.add_row(label, ", ".join(plugin["contract_versions"]) or "-", *cells)
    console.print(table)
    legend = "  ".join(f"{number} {check}" for number, check in enumerate(CHECKS, start=1))
    console.print(f"✓ pass  ✗ fail  – n/a   {legend}", style="dim", highlight=False)
    for reason in reasons:
        console.print(reason, markup=False, highlight=False)
    for failure in report["not_loaded"]:
        console.print(
            f"not loaded with your settings: {failure['error']}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    console.print("all plugins pass" if report["ok"] else "[red]some checks fail[/red]")


def _with_progress(run: Callable[[Progress | None], Any], *, shown: bool) -> Any:
    """Run with a progress line on stderr (a terminal only: a piped report stays clean)."""
    if not shown:
        return run(None)
    from rich.console import Console
    from rich.progress import Progress as Bar

    with Bar(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("checking", total=None)

        def advance(plugin: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=f"checking {plugin}")

        return run(advance)


@hookimpl
def register_cli(app: typer.Typer) -> None:
    """Add `check` and `new-plugin` to the `hookchain` command line."""

    @app.command("check")
    def check(
        plugins: Annotated[
            list[str] | None,
            typer.Argument(help="Plugin or distribution names; default: every installed plugin."),
        ] = None,
        contract: Annotated[
            str | None,
            typer.Option(help=f"Only this contract version (known: {_KNOWN})."),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """Run the conformance suite against installed plugins; exit 1 if any check fails."""
        from framework.testing._vectors import vector_versions

        if contract is not None and contract not in set(KNOWN_CONTRACT_VERSIONS) & set(
            vector_versions()
        ):
            raise UserError(f"unknown contract version {contract!r} (--contract); known: {_KNOWN}")
        _silence_logs()
        report = _with_progress(
            lambda progress: check_plugins(list(plugins or ()), contract, progress),
            shown=not as_json and sys.stderr.isatty(),
        )
        if as_json:
            typer.echo(json.dumps(report, indent=2))
        else:
            _print_matrix(report)
        if not report["ok"]:
            raise typer.Exit(1)

    @app.command("new-plugin")
    def new_plugin(
        name: Annotated[str, typer.Argument(help="Kebab-case plugin name, e.g. tool-reminder.")],
        directory: Annotated[
            Path, typer.Option("--dir", help="Folder to create the plugin's folder in.")
        ] = Path("."),
    ) -> None:
        """Create an installable plugin package with tests that include the conformance suite."""
        from framework._scaffold import ScaffoldError, scaffold

        try:
            target = scaffold(name, directory)
        except ScaffoldError as error:
            raise UserError(str(error)) from None
        typer.echo(f"created {target}")
        typer.echo(f"next: pip install -e '{target}[test]' && pytest {target}")
