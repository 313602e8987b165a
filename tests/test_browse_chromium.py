"""The memory browser in a real headless browser (Debian's chromium through chromedriver).

A real run (`evokernel run relu_add --budget 2`, the builtin policy) writes the
bank while its page is open: the page must follow it without a reload. Then its
pages must render with no console error, show the lineage and the plots, and a
bank full of hostile text must show it as text. Skipped, with the reason, only
where chromium, chromedriver or selenium cannot be had (`.ci/run` installs them).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evokernel.browse import ServeOptions, start

from test_browse import HOSTILE, KEY, build_bank

pytestmark = pytest.mark.slow

_CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1300,1000",
)
_RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[test]'")
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("no chromium and chromedriver here: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="evk-chromium-")
    for flag in (*_CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
    except WebDriverException as exc:
        pytest.skip(f"chromium did not start: {str(exc.msg).splitlines()[0]}")
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _open(driver, url: str) -> None:
    driver.get(url)
    errors = _console_errors(driver)
    assert errors == [], f"{url}: {errors}"


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _run_row(path: Path):
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT id, status FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None  # the run has not made its schema yet


@pytest.fixture
def live_run(tmp_path):
    """A real run writing a fresh bank, started before any page is opened."""
    path = tmp_path / "memory.db"
    log = path.with_suffix(".log")
    with log.open("w") as sink:
        writer = subprocess.Popen([sys.executable, "-m", "evokernel.cli", "run", "relu_add", "--budget", "2",
                                   "--memory", str(path)], stdout=sink, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _run_row(path), 120, "the run to open its bank")
        yield path, writer
        writer.wait(_RUN_TIMEOUT_S)
        assert writer.returncode == 0, log.read_text()[-2000:]
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def test_a_real_run_followed_live_then_browsed(browser, live_run, tmp_path_factory):
    """One test, so that pytest-xdist never splits it across processes and pays for the run twice."""
    server = start(live_run[0], ServeOptions(port=0))
    try:
        shots = tmp_path_factory.mktemp("shots")
        _follow_the_run(browser, live_run, server.url, shots)
        _browse_its_pages(browser, server.url, shots)
    finally:
        server.stop()


def _follow_the_run(browser, live_run, url: str, shots: Path) -> None:
    """The run's page, opened while the run writes, follows it to its end without a reload."""
    from selenium.webdriver.common.by import By

    path, writer = live_run
    run_id, status = _run_row(path)
    _open(browser, f"{url}/runs/{run_id}")
    first = browser.find_element(By.CSS_SELECTOR, '[data-field="steps_done"]').text
    assert status == "running" and writer.poll() is None and int(first) < 2, "the run ended before its page opened"
    browser.execute_script("window.evkSamePage = 'yes';")  # gone if the page were reloaded
    seen = {first}

    def finished() -> bool:
        seen.add(browser.find_element(By.CSS_SELECTOR, '[data-field="steps_done"]').text)
        return browser.find_element(By.CSS_SELECTOR, "[data-status]").text == "done"

    _wait(finished, _RUN_TIMEOUT_S, "the run page to show the run done")
    assert browser.execute_script("return window.evkSamePage") == "yes"
    assert browser.find_element(By.CSS_SELECTOR, '[data-field="steps_done"]').text == "2"
    assert len(seen) >= 2, seen  # the open page showed the count change as the steps landed
    rows = browser.find_elements(By.CSS_SELECTOR, 'tbody[data-rows="steps"] tr')
    assert len(rows) == 2 and "relu_add" in rows[0].text
    assert browser.find_element(By.CSS_SELECTOR, "progress[data-progress]").get_attribute("value") == "2"
    assert _console_errors(browser) == []
    browser.save_screenshot(str(shots / "run.png"))
    writer.wait(_RUN_TIMEOUT_S)


def _browse_its_pages(browser, url: str, shots: Path) -> None:
    """From the front page to the task: no console error, the plots decoded, the lineage with its diff."""
    from selenium.webdriver.common.by import By

    _open(browser, url + "/")
    browser.find_element(By.LINK_TEXT, "run 1").click()
    browser.find_element(By.LINK_TEXT, "relu_add").click()
    assert _console_errors(browser) == []
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("relu_add")
    # The plot is an image the browser decoded, not a broken link.
    plot = browser.find_element(By.ID, "attempts-plot")
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", plot) > 100
    # The lineage: the draft, and the refinement under it with its diff.
    nodes = browser.find_elements(By.CSS_SELECTOR, "#lineage .node")
    assert len(nodes) == 2 and "draft" in nodes[0].text and "refine" in nodes[1].text
    draft = nodes[0].find_element(By.TAG_NAME, "a").get_attribute("href")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#lineage ul.lineage ul.lineage .node")) == 1
    diff = browser.find_element(By.CSS_SELECTOR, "#lineage details.diff")
    diff.find_element(By.TAG_NAME, "summary").click()
    assert diff.find_element(By.CSS_SELECTOR, ".hl").is_displayed()
    assert "Best kernel" in browser.page_source and browser.find_elements(By.CSS_SELECTOR, "tr.best")
    browser.save_screenshot(str(shots / "task.png"))
    _open(browser, draft)  # the refinement's start point: its refine value moved
    values = browser.find_element(By.ID, "values-plot")
    assert values.tag_name == "img"
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", values) > 100
    for page in ("/tasks", "/items", "/items?kind=experience", "/skills", "/calls", "/search?q=relu_add+elementwise"):
        _open(browser, url + page)
    assert browser.find_elements(By.CSS_SELECTOR, "#hits mark")


def test_hostile_text_stays_text(browser, tmp_path_factory):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    path = tmp_path_factory.mktemp("browse-hostile") / "memory.db"
    ids = build_bank(path)
    server = start(path, ServeOptions(port=0))
    try:
        pages = [f"/items/{ids['refined']}", f"/items/{ids['failed']}", f"/calls/{ids['call']}",
                 f"/runs/{ids['run']}", f"/items/{ids['skill']}", "/tasks/" + KEY.replace("@", "%40"),
                 "/search?q=onerror"]
        for page in pages:
            _open(browser, server.url + page)
            with pytest.raises(NoAlertPresentException):
                browser.switch_to.alert.text  # noqa: B018: an alert would mean the script ran
            assert browser.execute_script("return document.querySelectorAll('img[src=\"x\"], script:not([src])').length") == 0
        _open(browser, f"{server.url}/calls/{ids['call']}")
        assert HOSTILE in browser.find_element(By.ID, "answer").text
        _open(browser, f"{server.url}/items/{ids['failed']}")
        assert HOSTILE in browser.find_element(By.TAG_NAME, "main").text
    finally:
        server.stop()
