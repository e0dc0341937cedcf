"""`hookchain observer status|dashboard|outcome`: read the log and append outcome lines."""

from __future__ import annotations

import enum
import re
import time
from pathlib import Path
from typing import Annotated

import typer
from framework import hookimpl

from observer._dashboard_server import LOOPBACK, make_server
from observer._log_file import append_record, log_files, no_data_message, read_log
from observer._log_view import fold
from observer._options import Options, resolve_data_dir
from observer._read_counter import note_read
from observer._records import OutcomeLine, iso_timestamp
from observer._status import render_status, write_status

_EPISODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")

DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="The log directory (default: OBSERVER_DATA_DIR or ./.hookchain/observer).",
    ),
]


class OutcomeChoice(enum.StrEnum):
    success = "success"
    failure = "failure"
    abandoned = "abandoned"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _data_dir(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit.expanduser().resolve()
    return resolve_data_dir(Options(), None)


def _existing_log(explicit: Path | None) -> Path:
    """The data directory, which must hold a log: a command that reads creates nothing."""
    directory = _data_dir(explicit)
    if not log_files(directory):
        typer.echo(no_data_message(directory), err=True)
        raise typer.Exit(1)
    return directory


def build_app() -> typer.Typer:
    """The `observer` command group."""
    app = typer.Typer(
        name="observer", help="Read the observer's episode log.", no_args_is_help=True
    )

    @app.command()
    def status(data_dir: DataDirOption = None) -> None:
        """Regenerate STATUS.md (per node and month: episodes, provenance, outcomes, errors)."""
        directory = _existing_log(data_dir)
        now = _now_ms()
        log = fold(read_log(directory).records)
        path = write_status(directory, render_status(log, now))
        note_read(directory, now)
        typer.echo(f"{path}: {len(log.episodes)} episodes, {len(log.errors)} observer errors")

    @app.command()
    def dashboard(
        port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 picks a free one).")] = 8765,
        data_dir: DataDirOption = None,
    ) -> None:
        """Serve the dashboard (map, breakdown, feed, aggregate) on 127.0.0.1 until interrupted."""
        try:
            server = make_server(_data_dir(data_dir), port)
        except OSError as error:
            typer.echo(
                f"observer dashboard: cannot listen on {LOOPBACK}:{port} ({error.strerror}); "
                "choose another port with --port N (--port 0 picks a free one)",
                err=True,
            )
            raise typer.Exit(2) from None
        typer.echo(f"observer dashboard: http://{LOOPBACK}:{server.server_address[1]}/")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()

    @app.command()
    def outcome(
        episode_id: Annotated[str, typer.Argument(help="The episode's id.")],
        value: Annotated[OutcomeChoice, typer.Argument(metavar="success|failure|abandoned")],
        data_dir: DataDirOption = None,
    ) -> None:
        """Append an outcome line for an episode (the episode line itself is never changed)."""
        directory = _existing_log(data_dir)
        if not _EPISODE_ID.match(episode_id):
            typer.echo(f"not an episode id: {episode_id!r}", err=True)
            raise typer.Exit(2)
        known = {episode.id for episode in fold(read_log(directory).records).episodes}
        if episode_id not in known:
            typer.echo(f"no episode {episode_id} in {directory}", err=True)
            raise typer.Exit(1)
        now = _now_ms()
        line = OutcomeLine(episode_id=episode_id, outcome=value.value, ts=iso_timestamp(now))
        append_record(directory, line.model_dump(mode="json"), now)
        typer.echo(f"{episode_id}: {value.value}")

    return app


@hookimpl
def register_cli(app: typer.Typer) -> None:
    """Add `hookchain observer …`."""
    app.add_typer(build_app(), name="observer")
