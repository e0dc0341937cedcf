"""`hookchain replay --into DIR`, then `hookchain observer dashboard --data-dir DIR/observer`:
the replayed episodes in the dashboard, in headless Chromium, both commands run as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

# The Chromium fixture lives with the dashboard's other browser test; tests run in importlib mode,
# so this folder is put on the path to reach it by name.
sys.path.insert(0, str(Path(__file__).parent))
from test_observer_dashboard_browser import browser  # noqa: F401 - the Chromium fixture

HOOKCHAIN = Path(sys.executable).with_name("hookchain")
CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "transcripts"


def environment(home: Path) -> dict[str, str]:
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith(("HOOKCHAIN_", "OBSERVER_"))
    }
    (home / "hookchain.toml").write_text("[hookchain]\n", encoding="utf-8")
    return {
        **inherited,
        "HOME": str(home),
        "HOOKCHAIN_DATA_DIR": str(home / "data"),
        "HOOKCHAIN_CONFIG": str(home / "hookchain.toml"),
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture
def replayed(tmp_path: Path) -> dict[str, Any]:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    into = tmp_path / "history"
    done = subprocess.run(
        [str(HOOKCHAIN), "replay", "--json", "--into", str(into), str(CORPUS)],
        capture_output=True,
        text=True,
        env=environment(tmp_path),
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["summary"]["into"] == str(into)
    return {"into": into, "report": report}


@pytest.fixture
def dashboard(replayed: dict[str, Any], tmp_path: Path) -> Iterator[str]:
    command = [str(HOOKCHAIN), "observer", "dashboard", "--port", "0"]
    command += ["--data-dir", str(replayed["into"] / "observer")]
    server = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(tmp_path),
        cwd=tmp_path,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "observer dashboard: http://127.0.0.1:PORT/"
        assert "http://127.0.0.1:" in line, (line, server.poll())
        yield line.split(": ", 1)[1].strip()
    finally:
        server.terminate()
        server.communicate(timeout=10)


def logged_episodes(folder: Path) -> list[dict[str, Any]]:
    lines = [
        json.loads(line)
        for path in sorted(folder.glob("episodes-*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    return [line for line in lines if line.get("record") == "episode"]


def test_a_replay_kept_with_into_shows_in_the_dashboard(
    browser: WebDriver,  # noqa: F811 - the fixture imported above
    replayed: dict[str, Any],
    dashboard: str,
    tmp_path: Path,
) -> None:
    episodes = logged_episodes(replayed["into"] / "observer")
    summary = replayed["report"]["summary"]
    assert len(episodes) >= 20
    assert summary["logged_records"]["observer"] >= len(episodes)
    replayed_sessions = {s["session_id"] for s in replayed["report"]["sessions"]}
    assert {e["session_id"] for e in episodes} <= replayed_sessions

    browser.get(dashboard)
    WebDriverWait(browser, 30).until(
        lambda driver: driver.find_element(By.TAG_NAME, "body").get_attribute("data-loaded")
    )
    shown = browser.find_element(By.ID, "summary").text
    assert shown.startswith(f"{len(episodes)} episodes, "), shown

    browser.find_element(By.ID, "tab-feed").click()
    feed = {
        item.get_attribute("data-episode")
        for item in browser.find_elements(By.CSS_SELECTOR, "#feed-list li")
    }
    assert feed == {e["id"] for e in episodes}

    browser.find_element(By.ID, "tab-aggregate").click()
    bars = {
        bar.get_attribute("data-day"): int(bar.get_attribute("data-episodes") or 0)
        for bar in browser.find_elements(By.CSS_SELECTOR, "#aggregate-bars .bar")
    }
    assert bars == dict(Counter(e["ts"][:10] for e in episodes))
    browser.save_screenshot(str(tmp_path / "replayed-aggregate.png"))
