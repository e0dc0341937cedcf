"""`hookchain observer status|outcome` and the dashboard server over HTTP."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from observer._dashboard_server import make_server
from observer._log_file import read_log
from observer._log_view import fold
from typer.testing import CliRunner

from observer import register_cli


@pytest.fixture
def app() -> typer.Typer:
    root = typer.Typer()

    @root.command()
    def version() -> None:
        """A second command, so the observer group is mounted as a subcommand."""

    register_cli(root)
    return root


def test_status_writes_status_md_and_counts_a_read(app: typer.Typer, fixture_log: Path) -> None:
    result = CliRunner().invoke(app, ["observer", "status", "--data-dir", str(fixture_log)])
    assert result.exit_code == 0, result.output
    assert "6 episodes, 1 observer errors" in result.output
    assert "| builder | 2 |" in (fixture_log / "STATUS.md").read_text()
    counter = json.loads((fixture_log / ".read-counter.json").read_text())
    assert counter["reads"] == 1


def test_outcome_appends_a_line(app: typer.Typer, fixture_log: Path) -> None:
    before = (fixture_log / "episodes-2026-01.jsonl").read_bytes()
    args = ["observer", "outcome", "ep-002", "failure", "--data-dir", str(fixture_log)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    outcomes = {e.id: e.outcome for e in fold(read_log(fixture_log).records).episodes}
    assert outcomes["ep-002"] == "failure"
    # The episode's own month file is untouched: the outcome goes to the current month's file.
    assert (fixture_log / "episodes-2026-01.jsonl").read_bytes().startswith(before)


@pytest.mark.parametrize(
    ("episode_id", "value", "code"),
    [("ep-999", "success", 1), ("../etc", "success", 2), ("ep-000", "great", 2)],
)
def test_outcome_refuses_unknown_ids_and_values(
    app: typer.Typer, fixture_log: Path, episode_id: str, value: str, code: int
) -> None:
    lines_before = len(read_log(fixture_log).records)
    args = ["observer", "outcome", episode_id, value, "--data-dir", str(fixture_log)]
    assert CliRunner().invoke(app, args).exit_code == code
    assert len(read_log(fixture_log).records) == lines_before


@pytest.fixture
def served(fixture_log: Path) -> Iterator[str]:
    server = make_server(fixture_log, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str, host: str | None = None) -> tuple[int, bytes, str]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        return error.code, error.read(), ""


def test_server_binds_loopback_only(fixture_log: Path) -> None:
    server = make_server(fixture_log, 0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


def test_server_serves_page_assets_and_data(served: str, fixture_log: Path) -> None:
    status, page, content_type = _get(served + "/")
    assert status == 200 and content_type.startswith("text/html")
    assert b'id="tab-aggregate"' in page
    assert _get(served + "/dashboard.js")[0] == 200
    status, body, content_type = _get(served + "/api/data")
    assert content_type == "application/json"
    data = json.loads(body)
    assert data["aggregate"]["totals"]["episodes"] == 6
    assert json.loads((fixture_log / ".read-counter.json").read_text())["reads"] == 1


def test_server_refuses_other_paths_and_foreign_hosts(served: str) -> None:
    assert _get(served + "/../episodes-2026-01.jsonl")[0] == 404
    assert _get(served + "/static/dashboard.js")[0] == 404
    assert _get(served + "/api/data", host="evil.example:80")[0] == 421


def test_the_dashboard_over_a_missing_folder_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / ".hookchain" / "observer"
    server = make_server(missing, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        status, body, _ = _get(f"http://127.0.0.1:{server.server_port}/api/data")
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200
    assert json.loads(body)["aggregate"]["totals"]["episodes"] == 0
    assert not (tmp_path / ".hookchain").exists()
