"""The page of ttt.serve in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``)
driven by Selenium plays a whole game of Qubic against ``random`` by clicking cells, shows the shipped
dqn_444's hint heat map after typed moves, and lets two agents play 3x3 step by step, then on to the end.
Screenshots go to ``$TTT_ARTIFACTS`` when set, else the test's tmp dir.

Skipped, with the reason, when Chromium, its driver or Selenium is missing (``.ci/run`` installs them).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the web extra) is not installed")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from ttt.serve import SHIPPED_FOLDER, listen, url_of  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
                                       "chromium-driver); .ci/run installs them")]


@pytest.fixture(scope="module")
def server_url():
    """The app served by uvicorn in a thread on a free loopback port, with the shipped checkpoints."""
    import uvicorn

    from ttt.web.app import create_app

    sock = listen("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(SHIPPED_FOLDER, seed=1), log_config=None,
                                           access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield url_of(sock)
    server.should_exit = True
    thread.join(timeout=5)
    sock.close()


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,760", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console, for script errors
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture
def artifacts(tmp_path) -> Path:
    folder = Path(os.environ.get("TTT_ARTIFACTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def moves_shown(driver) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, "#moves li"))


def start(driver, url: str, board: str, x: str, o: str) -> None:
    """Open the page and start a game from the setup form."""
    driver.get(url)
    wait = WebDriverWait(driver, 10)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".cell"))  # the default game is drawn
    driver.execute_script("document.getElementById('board').value = arguments[0];", board)
    for seat, spec in (("seat-x", x), ("seat-o", o)):
        field = driver.find_element(By.ID, seat)
        field.clear()
        field.send_keys(spec)
    driver.find_element(By.ID, "new").click()
    wait.until(lambda d: moves_shown(d) == 0 and "X to move" in d.find_element(By.ID, "status").text)


def test_a_whole_game_of_qubic_against_random_by_clicking(server_url, browser, artifacts):
    start(browser, server_url, "4x4x4", "human", "random")
    wait = WebDriverWait(browser, 10)
    assert len(browser.find_elements(By.CSS_SELECTOR, ".layer")) == 4  # the layers side by side
    assert len(browser.find_elements(By.CSS_SELECTOR, ".cell")) == 64
    for _ in range(32):
        status = browser.find_element(By.ID, "status")
        if "over" in status.get_attribute("class"):
            break
        before = moves_shown(browser)
        browser.find_element(By.CSS_SELECTOR, ".cell.playable").click()  # the lowest empty cell
        # the person's move and random's reply, or the end
        wait.until(lambda d, n=before: moves_shown(d) >= n + 2 or "over" in d.find_element(By.ID, "status")
                   .get_attribute("class"))
    status = browser.find_element(By.ID, "status")
    assert "over" in status.get_attribute("class")
    text = status.text
    assert text.startswith(("X (human) wins", "O (random) wins")), text
    winning = browser.find_elements(By.CSS_SELECTOR, ".cell.win")
    assert len(winning) == 4
    mark = text[0]
    assert all(cell.find_element(By.CSS_SELECTOR, ".mark").text == mark for cell in winning)
    cells = sorted(int(c.get_attribute("data-cell")) for c in winning)
    assert text.endswith("along " + ", ".join(map(str, cells)))
    last = browser.find_elements(By.CSS_SELECTOR, ".cell.last")
    assert len(last) == 1 and int(last[0].get_attribute("data-cell")) in cells  # the winner's move ended it
    browser.save_screenshot(str(artifacts / "qubic_vs_random.png"))

    # hovering a cell highlights the lines through it, across the layers: 7 lines through a corner
    corner = browser.find_element(By.CSS_SELECTOR, '.cell[data-cell="0"]')
    webdriver.ActionChains(browser).move_to_element(corner).perform()
    lit = {int(c.get_attribute("data-cell")) for c in browser.find_elements(By.CSS_SELECTOR, ".cell.hl")}
    assert len(lit) == 1 + 7 * 3 and {63, 48, 3} <= lit

    # the 3D view stacks the same cells in space: hovering still lights the lines
    browser.find_element(By.ID, "view3d").click()
    assert browser.find_elements(By.CSS_SELECTOR, ".layers.stack")
    top = browser.find_element(By.CSS_SELECTOR, '.cell[data-cell="63"]')
    webdriver.ActionChains(browser).move_to_element(top).perform()
    lit = {int(c.get_attribute("data-cell")) for c in browser.find_elements(By.CSS_SELECTOR, ".cell.hl")}
    assert len(lit) == 22 and {0, 21, 42} <= lit  # the space diagonal among them
    browser.find_element(By.ID, "view3d").click()


def test_the_hint_heat_map_of_the_shipped_network(server_url, browser, artifacts):
    start(browser, server_url, "4x4x4", "human", "checkpoint:dqn_444")
    wait = WebDriverWait(browser, 10)
    for move in ("1,1,1", "2,2,2", "0,1,2"):  # typed, as in ttt.play
        before = moves_shown(browser)
        browser.find_element(By.ID, "move-input").send_keys(move + "\n")
        wait.until(lambda d, n=before: moves_shown(d) >= n + 2)
    browser.find_element(By.ID, "hint-toggle").click()
    wait.until(lambda d: "Hint: dqn_444" in d.find_element(By.ID, "hint-info").text)
    values = [c.text for c in browser.find_elements(By.CSS_SELECTOR, ".cell .val") if c.text]
    assert len(values) == 64 - 6  # a value on every legal move
    assert all(-1 <= float(v) <= 1 for v in values)
    items = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#moves li")]
    assert items[0] == "X 21 (1,1,1)" and items[2] == "X 42 (2,2,2)"
    browser.save_screenshot(str(artifacts / "qubic_hint.png"))
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors  # no script error and no failed request in either game


def test_two_agents_step_by_step_then_play_on(server_url, browser):
    start(browser, server_url, "3x3", "random", "benchmark")
    wait = WebDriverWait(browser, 10)
    assert "X to move (random)" in browser.find_element(By.ID, "status").text
    assert moves_shown(browser) == 0  # agents against each other wait to be asked
    for n in (1, 2):
        browser.find_element(By.ID, "step").click()
        wait.until(lambda d, n=n: moves_shown(d) == n)
    browser.find_element(By.ID, "auto").click()  # play on, a move every 0.4 s
    wait.until(lambda d: "over" in d.find_element(By.ID, "status").get_attribute("class"))
    text = browser.find_element(By.ID, "status").text
    assert text.startswith(("X (random) wins", "O (benchmark) wins", "Draw")), text
    assert 5 <= moves_shown(browser) <= 9
    assert browser.find_element(By.ID, "step").get_attribute("disabled")
