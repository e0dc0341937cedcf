"""The dashboard page end to end in headless Chromium: load a fixture log, walk the four views."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from observer._dashboard_server import make_server
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

CHROMEDRIVER = "/usr/bin/chromedriver"
# Debian's /usr/bin/chromium is a shell launcher; the binary itself sits beside its resources.
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")
MISSING = (
    "headless Chromium is needed: install the Debian packages `chromium` and `chromium-driver` "
    "(apt-get install -y chromium chromium-driver)"
)


def _missing() -> None:
    # CI installs Chromium (.ci/run), so there a missing browser is a failure, never a skip.
    if os.environ.get("CI"):
        pytest.fail(MISSING)
    pytest.skip(MISSING)


def _chromium() -> str:
    for candidate in CHROMIUM_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    _missing()
    raise AssertionError("unreachable")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    if shutil.which(CHROMEDRIVER) is None:
        _missing()
    # Never let Selenium Manager fetch a browser or driver: only the installed ones are used.
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = _chromium()
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1200,800",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def dashboard_url(fixture_log: Path) -> Iterator[str]:
    server = make_server(fixture_log, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


def _visible_view(driver: WebDriver) -> str:
    shown = [
        section.get_attribute("id")
        for section in driver.find_elements(By.CSS_SELECTOR, "section.view")
        if section.is_displayed()
    ]
    assert len(shown) == 1, shown
    return str(shown[0])


def _open(driver: WebDriver, view: str) -> None:
    driver.find_element(By.ID, f"tab-{view}").click()
    assert _visible_view(driver) == f"view-{view}"
    assert driver.find_element(By.ID, f"tab-{view}").get_attribute("aria-selected") == "true"


def test_dashboard_shows_the_four_views(
    browser: WebDriver, dashboard_url: str, tmp_path: Path
) -> None:
    browser.get(dashboard_url)
    WebDriverWait(browser, 20).until(
        lambda driver: driver.find_element(By.TAG_NAME, "body").get_attribute("data-loaded")
    )
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true"
    summary = browser.find_element(By.ID, "summary").text
    assert summary == "6 episodes, 4 nodes, 1 observer error"

    assert _visible_view(browser) == "view-map"
    nodes = {
        group.get_attribute("data-node"): group.get_attribute("data-episodes")
        for group in browser.find_elements(By.CSS_SELECTOR, "#map-graph g.node")
    }
    assert nodes == {"builder": "2", "discovery-interview": "2", "none": "1", "reviewer": "1"}
    labels = {
        text.text for text in browser.find_elements(By.CSS_SELECTOR, "#map-graph g.node text")
    }
    assert "discovery-interview (2)" in labels
    assert len(browser.find_elements(By.CSS_SELECTOR, "#map-graph line")) == 4
    browser.save_screenshot(str(tmp_path / "map.png"))

    _open(browser, "breakdown")
    rows = {
        row.get_attribute("data-node"): [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in browser.find_elements(By.CSS_SELECTOR, "#breakdown-table tbody tr")
    }
    assert rows["discovery-interview"] == ["discovery-interview", "2", "2", "0", "1", "0", "0", "1"]
    assert rows["builder"] == ["builder", "2", "0", "2", "0", "0", "1", "1"]
    browser.save_screenshot(str(tmp_path / "breakdown.png"))

    _open(browser, "feed")
    items = browser.find_elements(By.CSS_SELECTOR, "#feed-list li")
    assert [item.get_attribute("data-episode") for item in items] == [
        "ep-005",
        "ep-004",
        "ep-003",
        "ep-002",
        "ep-001",
        "ep-000",
    ]
    newest = items[0]
    assert newest.find_element(By.CSS_SELECTOR, ".node").text == "reviewer"
    assert newest.find_element(By.CSS_SELECTOR, ".harness").text == "codex"
    assert items[-1].find_element(By.CSS_SELECTOR, ".harness").text == "claude-code"
    assert items[-1].find_element(By.CSS_SELECTOR, ".outcome").text == "success"
    browser.save_screenshot(str(tmp_path / "feed.png"))

    _open(browser, "aggregate")
    bars = {
        bar.get_attribute("data-day"): bar.get_attribute("data-episodes")
        for bar in browser.find_elements(By.CSS_SELECTOR, "#aggregate-bars .bar")
    }
    assert bars == {
        "2026-01-01": "1",
        "2026-01-02": "1",
        "2026-01-03": "2",
        "2026-02-03": "1",
        "2026-02-04": "1",
    }
    labels = [day.text for day in browser.find_elements(By.CSS_SELECTOR, "#aggregate-bars .day")]
    assert labels == ["01-01", "01-02", "01-03", "02-03", "02-04"]
    months = {
        row.get_attribute("data-month"): [
            cell.text for cell in row.find_elements(By.TAG_NAME, "td")
        ]
        for row in browser.find_elements(By.CSS_SELECTOR, "#aggregate-table tbody tr")
    }
    assert months["2026-01"] == ["2026-01", "4", "1", "0", "1", "2", "50%", "3.5", "1"]
    assert months["2026-02"] == ["2026-02", "2", "0", "0", "0", "2", "0%", "3", "0"]
    screenshot = tmp_path / "aggregate.png"
    browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 1000


def _loaded(driver: WebDriver, url: str) -> None:
    driver.get(url)
    WebDriverWait(driver, 20).until(
        lambda driver: driver.find_element(By.TAG_NAME, "body").get_attribute("data-loaded")
    )
    assert driver.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true"


def test_an_empty_folder_says_which_folder_and_how_to_get_data(
    browser: WebDriver, tmp_path: Path
) -> None:
    missing = tmp_path / "project" / ".hookchain" / "observer"
    server = make_server(missing, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        _loaded(browser, f"http://127.0.0.1:{server.server_port}/")
        empty = browser.find_element(By.ID, "empty-state")
        assert empty.is_displayed()
        assert str(missing) in empty.text
        assert "hookchain replay" in empty.text and "--into" in empty.text
        assert "hookchain install" in empty.text
        assert str(missing) in browser.find_element(By.ID, "source").text
        assert not (tmp_path / "project").exists()
    finally:
        server.shutdown()
        server.server_close()


def test_a_log_with_episodes_shows_no_empty_state_and_names_its_folder(
    browser: WebDriver, dashboard_url: str, fixture_log: Path
) -> None:
    _loaded(browser, dashboard_url)
    assert not browser.find_element(By.ID, "empty-state").is_displayed()
    assert str(fixture_log) in browser.find_element(By.ID, "source").text


@pytest.mark.parametrize(("suffix", "view"), [("#feed", "feed"), ("?view=aggregate", "aggregate")])
def test_a_link_opens_its_view(
    browser: WebDriver, dashboard_url: str, suffix: str, view: str
) -> None:
    _loaded(browser, dashboard_url + suffix)
    assert _visible_view(browser) == f"view-{view}"
    assert browser.find_element(By.ID, f"tab-{view}").get_attribute("aria-selected") == "true"


def test_choosing_a_tab_makes_the_address_a_link_to_it(
    browser: WebDriver, dashboard_url: str
) -> None:
    _loaded(browser, dashboard_url)
    _open(browser, "breakdown")
    link = browser.current_url
    assert link.endswith("#breakdown")
    browser.get(dashboard_url)
    _loaded(browser, link)
    assert _visible_view(browser) == "view-breakdown"
    browser.back()
    WebDriverWait(browser, 10).until(lambda driver: _visible_view(driver) == "view-map")
