"""The page of ttt.serve in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``)
driven by Selenium plays a whole game of Qubic against ``random`` by clicking cells, clicks every one of the 64
cells of the 3D view at its default angle and after turning it (each click must play that cell), drops pieces
on Score Four by clicking anywhere in a column, shows the shipped dqn_444's hint heat map on its fixed scale,
checks the layout (a long move list, a narrow window, a refused new game), and lets two agents play 3x3 step
by step, then on to the end. Then what the page must not get wrong: clicks and keys after a drag of the 3D
view, another site's page and a rebound name (DNS rebinding) starting games, sideways scrolling at 400 px and
the panel beside Qubic at 1280 x 800, a hovered cell that looks like the last move, texts outside their 3D
cells at a tilt, numbers on red cells, a "best move" in a lost position, the first key typed into the Move
box, other scripts' digits, a 503 not asked again, and a click lost while the agent thinks. Screenshots go to
``$TTT_ARTIFACTS`` when set, else the test's tmp dir.

Skipped, with the reason, when Chromium, its driver or Selenium is missing (``.ci/run`` installs them).
"""

from __future__ import annotations

import colorsys
import os
import re
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the web extra) is not installed")

from selenium.webdriver.common.actions.action_builder import ActionBuilder  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from ttt.games import make_game  # noqa: E402
from ttt.serve import SHIPPED_FOLDER, listen, url_of  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
                                       "chromium-driver); .ci/run installs them")]


@pytest.fixture(scope="module")
def served():
    """(url, app): the app served by uvicorn in a thread on a free loopback port, with the shipped checkpoints."""
    import uvicorn

    from ttt.web.app import create_app

    sock = listen("127.0.0.1", 0)
    app = create_app(SHIPPED_FOLDER, seed=1)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield url_of(sock), app
    server.should_exit = True
    thread.join(timeout=5)
    sock.close()


@pytest.fixture(scope="module")
def server_url(served) -> str:
    return served[0]


WINDOW = (1400, 760)
REBOUND = "rebound.test"  # as in DNS rebinding: another site's name that the browser resolves to 127.0.0.1


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", "--force-device-scale-factor=1",
                f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1"):  # a site's name made to resolve here
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


def waiting(driver, seconds: float = 10) -> WebDriverWait:
    return WebDriverWait(driver, seconds, poll_frequency=0.05)


def start(driver, url: str, board: str, x: str, o: str) -> None:
    """Open the page and start a game from the setup form."""
    driver.get(url)
    wait = waiting(driver)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".cell"))  # the default game is drawn
    default = driver.find_element(By.ID, "board-area").get_attribute("data-game")
    driver.execute_script("document.getElementById('board').value = arguments[0];", board)
    for seat, spec in (("seat-x", x), ("seat-o", o)):
        field = driver.find_element(By.ID, seat)
        field.clear()
        field.send_keys(spec)
    driver.find_element(By.ID, "new").click()
    area = driver.find_element(By.ID, "board-area")
    wait.until(lambda d: area.get_attribute("data-game") != default)  # the new game is drawn
    assert area.get_attribute("data-board") == board
    if x == "human" or o != "human":  # else the agent opens at once
        assert moves_shown(driver) == 0 and "X to move" in driver.find_element(By.ID, "status").text


def show_3d(driver) -> None:
    driver.find_element(By.ID, "view3d").click()
    waiting(driver).until(lambda d: d.find_element(By.CSS_SELECTOR, "svg.scene").is_displayed())
    assert not driver.find_element(By.CSS_SELECTOR, ".layers").is_displayed()  # the 3D view alone takes clicks


def click_at(driver, x: float, y: float) -> None:
    """A person's click at a point of the window (viewport coordinates), wherever the page put things."""
    actions = ActionBuilder(driver, duration=0)
    actions.pointer_action.move_to_location(round(x), round(y)).click()
    actions.perform()


def drag_from(driver, cell: int) -> None:
    """A person's drag on the 3D view from the centre of ``cell``: 90 pixels right and 42 up, in six steps."""
    start_at = next(c for c in centres_3d(driver) if c["cell"] == cell)
    actions = ActionBuilder(driver, duration=0)
    actions.pointer_action.move_to_location(round(start_at["x"]), round(start_at["y"])).pointer_down()
    for step in range(1, 7):
        actions.pointer_action.move_to_location(round(start_at["x"]) + 15 * step, round(start_at["y"]) - 7 * step)
    actions.pointer_action.pointer_up()
    actions.perform()


def centres_3d(driver) -> list[dict]:
    """Every cell of the 3D view: its number, the centre of its drawn shape on screen, that shape's size,
    and the cell the browser finds on top at that centre (None: none)."""
    return driver.execute_script("""
        window.scrollTo(0, 0);
        return [...document.querySelectorAll('svg.scene .cell3d')].map((g) => {
          const r = g.querySelector('polygon').getBoundingClientRect();
          const x = r.left + r.width / 2, y = r.top + r.height / 2;  // a parallelogram's centre
          const hit = document.elementFromPoint(x, y), top = hit && hit.closest('[data-cell]');
          return {cell: Number(g.dataset.cell), x, y, width: r.width, height: r.height,
                  top: top ? Number(top.dataset.cell) : null};
        });""")


# A full Qubic board with no line of four (one layer a row of 16, layer 0 first): clicking its X cells and its
# O cells in turn plays every cell once, and no click before the last ends the game.
DRAWN = "XXOOXOXOOOXXXXXO" "OXOXXOOXXOXOOXOX" "XOOXOXOXXXXOOXOO" "XXXOOOXXOXOOOOOX"
CLICK_ORDER = [c for pair in zip([c for c in range(64) if DRAWN[c] == "X"], [c for c in range(64) if DRAWN[c] == "O"],
                                 strict=True) for c in pair]

# after a click, the move list's latest entry once it has the n-th move (or the error line)
MOVE_SHOWN = """
    const [n, done] = [arguments[0], arguments[arguments.length - 1]], t0 = Date.now();
    (function poll() {
      const moves = document.querySelectorAll('#moves li'), error = document.getElementById('error').textContent;
      if (moves.length >= n || error || Date.now() - t0 > 8000)
        return done({played: moves.length ? moves[moves.length - 1].textContent : null, count: moves.length, error});
      setTimeout(poll, 5);
    })();"""


def cells_in_sight(driver) -> dict[int, dict]:
    """``centres_3d`` by cell, once it is checked that every cell lies in the window, large enough to click,
    with nothing else on its centre."""
    cells = {c["cell"]: c for c in centres_3d(driver)}
    assert sorted(cells) == list(range(64))
    width, height = driver.execute_script("return [innerWidth, innerHeight];")
    for c in cells.values():
        assert 0 < c["x"] < width and 0 < c["y"] < height, f"cell {c['cell']} is out of the window: {c}"
        assert c["width"] >= 12 and c["height"] >= 8, f"cell {c['cell']} is too small to click: {c}"
    covered = [(c["cell"], c["top"]) for c in cells.values() if c["top"] != c["cell"]]
    assert not covered, f"(cell, what lies on its centre): {covered}"
    return cells


def click_every_cell(driver) -> list[str]:
    """Click the centre of each cell of the 3D view in ``CLICK_ORDER``, as a person's pointer does, and return
    the move each click played, as the move list shows it (``X 0 (0,0,0)``)."""
    cells = cells_in_sight(driver)
    played = []
    for n, cell in enumerate(CLICK_ORDER, start=1):
        click_at(driver, cells[cell]["x"], cells[cell]["y"])
        answer = driver.execute_async_script(MOVE_SHOWN, n)
        assert answer["count"] == n and not answer["error"], (cell, answer)
        played.append(answer["played"])
    return played


def test_a_whole_game_of_qubic_against_random_by_clicking(server_url, browser, artifacts):
    start(browser, server_url, "4x4x4", "human", "random")
    wait = waiting(browser)
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

    # a click on a taken cell: the server's reason shows
    taken = browser.find_element(By.CSS_SELECTOR, f'.cell[data-cell="{cells[0]}"]')
    taken.click()
    wait.until(lambda d: d.find_element(By.ID, "error").text)
    assert "the game is over" in browser.find_element(By.ID, "error").text

    # hovering a cell rings the lines through it, across the layers, one colour per line: 7 through a corner
    lines = {tuple(line) for line in make_game("4x4x4").lines.tolist()}
    corner = browser.find_element(By.CSS_SELECTOR, '.cell[data-cell="0"]')
    webdriver.ActionChains(browser).move_to_element(corner).perform()
    rings = {int(c.get_attribute("data-cell")): c.value_of_css_property("box-shadow")
             for c in browser.find_elements(By.CSS_SELECTOR, ".cell.hl")}
    assert len(rings) == 7 * 3 and {63, 48, 3} <= set(rings)  # the corner itself is shaded, not ringed
    assert [c.get_attribute("data-cell") for c in browser.find_elements(By.CSS_SELECTOR, ".cell.hovered")] == ["0"]
    by_colour: dict[str, set[int]] = {}
    for cell, ring in rings.items():
        by_colour.setdefault(re.match(r"rgba?\([^)]*\)", ring).group(0), set()).add(cell)
    assert len(by_colour) == 7 and all(tuple(sorted({0} | group)) in lines for group in by_colour.values())

    # the 3D view draws the winning line through the stack, and the hovered lines, one colour each
    show_3d(browser)
    drawn = browser.find_elements(By.CSS_SELECTOR, "svg.scene .win-line")
    assert [d.get_attribute("data-line") for d in drawn] == ["-".join(map(str, cells))]
    top = browser.find_element(By.CSS_SELECTOR, '.cell3d[data-cell="63"]')
    webdriver.ActionChains(browser).move_to_element(top).perform()
    hovered = browser.find_elements(By.CSS_SELECTOR, "svg.scene .hl-line")
    drawn_lines = {tuple(map(int, h.get_attribute("data-line").split("-"))) for h in hovered}
    assert len(drawn_lines) == 7 and all(63 in line and line in lines for line in drawn_lines)
    assert (0, 21, 42, 63) in drawn_lines  # the space diagonal
    assert len({h.get_attribute("stroke") for h in hovered}) == 7
    legend = browser.find_elements(By.CSS_SELECTOR, "#lines-info li")
    assert {li.get_attribute("data-line") for li in legend} == {h.get_attribute("data-line") for h in hovered}
    browser.find_element(By.ID, "view3d").click()


def test_every_cell_of_the_3d_view_takes_its_click_before_and_after_turning(server_url, browser, artifacts):
    """At the default angle and after turning the view by a drag: a game of two people played by clicking all
    64 cells of the 3D view, each at the centre of its shape; every click must play its cell, and the full
    board is a draw. Then, at the steepest angle, nothing covers the centre of any cell."""
    start(browser, server_url, "4x4x4", "human", "human")
    show_3d(browser)
    every_move = [f"{DRAWN[c]} {c} ({c // 16},{c // 4 % 4},{c % 4})" for c in CLICK_ORDER]
    angle = lambda: tuple(browser.find_element(By.CSS_SELECTOR, "svg.scene").get_attribute(k)  # noqa: E731
                          for k in ("data-spin", "data-tilt"))
    angles = [angle()]
    assert click_every_cell(browser) == every_move  # the default angle
    assert browser.find_element(By.ID, "status").text == "Draw"
    browser.save_screenshot(str(artifacts / "qubic_3d_default.png"))

    # turned by dragging, from a cell: sideways spins, upwards flattens; the drag is no move
    browser.find_element(By.ID, "new").click()
    waiting(browser).until(lambda d: moves_shown(d) == 0)
    drag_from(browser, 21)
    angles.append(angle())
    assert angles[1] == ("15", "20")  # -30 + 90 / 2 degrees; 30 - 42 / 4, held at the flattest view
    assert moves_shown(browser) == 0 and not browser.find_element(By.ID, "error").text
    assert click_every_cell(browser) == every_move
    browser.save_screenshot(str(artifacts / "qubic_3d_turned.png"))

    # turned by the arrow keys to the steepest view, where the layers stand tallest
    browser.find_element(By.ID, "new").click()
    waiting(browser).until(lambda d: moves_shown(d) == 0)
    browser.execute_script("document.activeElement.blur();")
    webdriver.ActionChains(browser, duration=0).send_keys(Keys.ARROW_UP * 5 + Keys.ARROW_RIGHT * 2).perform()
    angles.append(angle())
    assert angles[2] == ("45", "40")  # a layer's corners farthest apart on screen
    assert len(cells_in_sight(browser)) == 64


def test_score_four_drops_a_click_anywhere_in_its_column(server_url, browser):
    start(browser, server_url, "4x4x4_gravity", "human", "human")
    wait = waiting(browser)
    show_3d(browser)
    reach = lambda d: sorted(int(c.get_attribute("data-cell"))  # noqa: E731
                             for c in d.find_elements(By.CSS_SELECTOR, ".cell3d.reach"))
    assert reach(browser) == list(range(16))  # the bottom layer, marked
    column = [6 + 16 * z for z in range(4)]  # row 1, column 2, from the bottom up
    for n, clicked in enumerate((column[3], column[3], column[1], column[2]), start=1):
        c = next(c for c in centres_3d(browser) if c["cell"] == clicked)
        click_at(browser, c["x"], c["y"])
        wait.until(lambda d, n=n: moves_shown(d) == n)
        last = browser.find_elements(By.CSS_SELECTOR, "#moves li")[-1].text
        assert last.split(" ")[1] == str(column[n - 1])  # the piece fell to the column's lowest empty cell
        assert (column[n] in reach(browser)) if n < 4 else not set(column) & set(reach(browser))
    assert len(reach(browser)) == 15
    click_at(browser, c["x"], c["y"])  # the column is full: the server says so
    wait.until(lambda d: d.find_element(By.ID, "error").text)
    assert "column 1,2 is full" in browser.find_element(By.ID, "error").text
    assert moves_shown(browser) == 4


def test_the_hint_heat_map_of_the_shipped_network(server_url, browser, artifacts):
    start(browser, server_url, "4x4x4", "human", "checkpoint:dqn_444")
    wait = waiting(browser)
    for move in ("1,1,1", "2,2,2", "0,1,2"):  # typed, as in ttt.play
        before = moves_shown(browser)
        browser.find_element(By.ID, "move-input").send_keys(move + "\n")
        wait.until(lambda d, n=before: moves_shown(d) >= n + 2)
    browser.find_element(By.ID, "hint-toggle").click()
    wait.until(lambda d: "Hint: dqn_444" in d.find_element(By.ID, "hint-info").text)
    shown = {int(c.get_attribute("data-cell")): c for c in browser.find_elements(By.CSS_SELECTOR, ".cell")
             if c.find_element(By.CSS_SELECTOR, ".val").text}
    values = {c: float(el.find_element(By.CSS_SELECTOR, ".val").text) for c, el in shown.items()}
    assert len(values) == 64 - 6  # a value on every legal move
    assert all(-1 <= v <= 1 for v in values.values())
    # one fixed scale, -1 red (hue 0) to +1 green (hue 130), whatever the position: close values look alike
    for c, el in shown.items():
        rgb = [int(v) / 255 for v in re.findall(r"\d+", el.value_of_css_property("background-color"))[:3]]
        hue = 360 * colorsys.rgb_to_hls(*rgb)[0]
        assert abs(hue - 65 * (values[c] + 1)) < 3, (c, values[c], hue)
    spread = max(values.values()) - min(values.values())
    assert float(browser.find_element(By.ID, "hint-spread").text) == pytest.approx(spread, abs=0.0015)
    items = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#moves li")]
    assert items[0] == "X 21 (1,1,1)" and items[2] == "X 42 (2,2,2)"
    browser.save_screenshot(str(artifacts / "qubic_hint.png"))
    show_3d(browser)  # the same values on the 3D view, and the lines through a cell: the README's picture
    texts = {int(g.get_attribute("data-cell")): g.find_element(By.CSS_SELECTOR, "text.val").text
             for g in browser.find_elements(By.CSS_SELECTOR, ".cell3d")
             if g.find_element(By.CSS_SELECTOR, "text.val").text}
    assert {c: float(t) for c, t in texts.items()} == values
    browser.set_window_size(1100, 900)  # the whole view and the panel, lines' legend included
    try:
        corner = browser.find_element(By.CSS_SELECTOR, '.cell3d[data-cell="0"]')
        webdriver.ActionChains(browser, duration=0).move_to_element(corner).perform()
        assert len(browser.find_elements(By.CSS_SELECTOR, "#lines-info li")) == 7
        browser.save_screenshot(str(artifacts / "qubic_hint_3d.png"))
    finally:
        browser.set_window_size(*WINDOW)
    browser.find_element(By.ID, "view3d").click()
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"
              and not re.search(r"status of 4\d\d", e["message"])]  # the refusals asked for above
    assert not errors  # no script error and no failed request in any game so far


def test_the_layout_holds(server_url, browser):
    # a long game: the move list stays in its box, two moves a row, scrolled to the latest
    start(browser, server_url, "4x4x4", "human", "human")
    state, plies = make_game("4x4x4").initial_state(), []
    while len(plies) < 24:  # the lowest cells that end nothing
        cell = next(c for c in state.legal_actions() if not state.apply(c).is_terminal())
        plies.append(cell)
        state = state.apply(cell)
    field = browser.find_element(By.ID, "move-input")
    for n, cell in enumerate(plies, start=1):
        field.send_keys(f"{cell}\n")
        waiting(browser).until(lambda d, n=n: moves_shown(d) == n)
    box = browser.execute_script("""
        const list = document.getElementById('moves'), last = list.lastElementChild.getBoundingClientRect();
        const r = list.getBoundingClientRect();
        return {scroll: list.scrollWidth, client: list.clientWidth, right: r.right, bottom: r.bottom,
                lastRight: last.right, lastBottom: last.bottom};""")
    assert box["scroll"] <= box["client"] and box["lastRight"] <= box["right"] + 1, box  # nothing off sideways
    assert box["lastBottom"] <= box["bottom"] + 1, box  # the latest move in sight

    # a new game the server refuses: the board and the form keep the game in play
    game_id = browser.find_element(By.ID, "board-area").get_attribute("data-game")
    browser.execute_script("document.getElementById('board').value = '3x3';")
    field = browser.find_element(By.ID, "seat-o")
    field.clear()
    field.send_keys("no_such_player")
    browser.find_element(By.ID, "new").click()
    waiting(browser).until(lambda d: d.find_element(By.ID, "error").text)
    assert "New game refused" in browser.find_element(By.ID, "error").text
    assert "no_such_player" in browser.find_element(By.ID, "error").text  # the server's reason
    assert browser.find_element(By.ID, "board").get_attribute("value") == "4x4x4"
    assert browser.find_element(By.ID, "seat-o").get_attribute("value") == "human"
    assert browser.find_element(By.ID, "board-area").get_attribute("data-game") == game_id
    assert len(browser.find_elements(By.CSS_SELECTOR, ".cell")) == 64 and moves_shown(browser) == len(plies)

    # a narrow window opens at the top of the page, its header in sight
    browser.set_window_size(800, 800)
    try:
        browser.get(server_url)
        waiting(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".cell")
                               and d.find_element(By.ID, "status").text)
        assert browser.execute_script("return window.scrollY;") == 0
        assert browser.find_element(By.TAG_NAME, "header").rect["y"] == 0
    finally:
        browser.set_window_size(*WINDOW)


def test_two_agents_step_by_step_then_play_on(server_url, browser):
    start(browser, server_url, "3x3", "random", "benchmark")
    wait = waiting(browser)
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


def played(driver) -> list[int]:
    """The cells of the moves so far, as the move list shows them."""
    return [int(li.text.split(" ")[1]) for li in driver.find_elements(By.CSS_SELECTOR, "#moves li")]


def test_clicks_and_keys_play_after_a_drag_of_the_3d_view(server_url, browser):
    """A drag of the 3D view swallows the click that ends it, and nothing after it: a click or Enter or Space
    on the layers side by side, a click on the 3D view, a click in a new game of 3x3."""
    start(browser, server_url, "4x4x4", "human", "human")
    wait = waiting(browser)
    for n, (cell, press) in enumerate([(0, None), (1, Keys.ENTER), (2, Keys.SPACE)], start=1):
        show_3d(browser)
        drag_from(browser, 21)
        browser.find_element(By.ID, "view3d").click()  # back to the layers side by side
        flat = browser.find_element(By.CSS_SELECTOR, f'.cell[data-cell="{cell}"]')
        flat.click() if press is None else flat.send_keys(press)
        wait.until(lambda d, n=n: moves_shown(d) == n)
    show_3d(browser)
    drag_from(browser, 21)
    target = next(c for c in centres_3d(browser) if c["cell"] == 5)
    click_at(browser, target["x"], target["y"])
    wait.until(lambda d: moves_shown(d) == 4)
    assert played(browser) == [0, 1, 2, 5] and not browser.find_element(By.ID, "error").text
    drag_from(browser, 21)
    browser.execute_script("document.getElementById('board').value = '3x3';")
    browser.find_element(By.ID, "new").click()  # the same page: a new game of 3x3, drawn flat
    wait.until(lambda d: d.find_element(By.ID, "board-area").get_attribute("data-board") == "3x3")
    browser.find_element(By.CSS_SELECTOR, '.cell[data-cell="4"]').click()
    wait.until(lambda d: moves_shown(d) == 1)
    assert played(browser) == [4]


CROSS_ORIGIN_POST = """
    const [url, done] = [arguments[0], arguments[arguments.length - 1]];
    fetch(url, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
                body: JSON.stringify({board: "3x3", x: "human", o: "random"})})
      .then(() => done("sent"), (e) => done(String(e)));"""


@pytest.fixture(scope="module")
def other_site():
    """The URL of another site's page (a plain page on another port): its scripts may send any request."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the handler's name in http.server)
            body = b"<!doctype html><title>another site</title><p>another site"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    site = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{site.server_address[1]}/"
    site.shutdown()
    site.server_close()


def test_another_sites_page_and_a_rebound_name_start_no_game(served, other_site, browser, caplog):
    url, app = served
    port = url.rstrip("/").rsplit(":", 1)[1]
    browser.get(other_site)
    games = len(app.state.table)
    with caplog.at_level("INFO", logger="ttt.serve"):
        browser.execute_async_script(CROSS_ORIGIN_POST, f"{url}api/games")  # a simple request: sent unasked
        waiting(browser).until(lambda d: "POST /api/games 403" in caplog.text)
    assert len(app.state.table) == games  # refused: the API answers its own page only
    browser.get(f"http://{REBOUND}:{port}/")  # DNS rebinding: another site's name resolved to this machine
    text = browser.find_element(By.TAG_NAME, "body").text
    assert f"host '{REBOUND}:{port}' is not one of this server's names" in text, text
    assert not browser.find_elements(By.CSS_SELECTOR, ".cell") and len(app.state.table) == games


def rect(driver, selector: str) -> dict:
    return driver.execute_script("return document.querySelector(arguments[0]).getBoundingClientRect().toJSON();",
                                 selector)


def test_no_sideways_scroll_at_400_px_and_the_panel_beside_qubic_at_1280(server_url, browser, artifacts):
    start(browser, server_url, "4x4x4", "human", "checkpoint:dqn_444")
    browser.find_element(By.ID, "hint-toggle").click()
    waiting(browser).until(lambda d: "Hint: dqn_444" in d.find_element(By.ID, "hint-info").text)
    try:
        browser.set_window_size(1280, 800)
        layers, aside = rect(browser, ".layers"), rect(browser, "aside")
        assert aside["left"] >= layers["right"] and aside["top"] < layers["bottom"], (layers, aside)
        below = browser.execute_script("return innerHeight;")
        for part in ("#status", "#hint-info", "#moves"):  # none pushed below the fold
            assert rect(browser, part)["top"] < below, part
        browser.save_screenshot(str(artifacts / "qubic_1280.png"))
        browser.set_window_size(400, 800)
        for view in ("flat", "3D"):
            if view == "3D":
                show_3d(browser)
            width = browser.execute_script("return [document.documentElement.scrollWidth, "
                                           "document.documentElement.clientWidth];")
            assert width[0] <= width[1], (view, width)
            browser.save_screenshot(str(artifacts / f"qubic_400_{view}.png"))
    finally:
        browser.set_window_size(*WINDOW)
    browser.find_element(By.ID, "view3d").click()


def test_a_hovered_cell_does_not_look_like_the_last_move(server_url, browser):
    start(browser, server_url, "4x4x4", "human", "human")
    browser.find_element(By.CSS_SELECTOR, '.cell[data-cell="0"]').click()
    waiting(browser).until(lambda d: moves_shown(d) == 1)
    for view, cell, part, style in ((".cell", ".cell", "", "border-top-color"),
                                    ("3D", ".cell3d", " polygon", "stroke")):
        if view == "3D":
            show_3d(browser)
        hovered = browser.find_element(By.CSS_SELECTOR, f'{cell}[data-cell="5"]')
        webdriver.ActionChains(browser, duration=0).move_to_element(hovered).perform()
        assert "hovered" in hovered.get_attribute("class")
        last = browser.find_element(By.CSS_SELECTOR, f"{cell}.last{part}").value_of_css_property(style)
        mine = browser.find_element(By.CSS_SELECTOR, f'{cell}[data-cell="5"]{part}').value_of_css_property(style)
        assert mine != last, (view, mine, last)
    browser.find_element(By.ID, "view3d").click()


TEXTS_3D = """
    return [...document.querySelectorAll('svg.scene .cell3d')].map((g) => {
      const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
      const texts = {};
      for (const t of g.querySelectorAll('text')) if (t.textContent) texts[t.classList[0]] = [t.textContent, box(t)];
      const [poly, heat] = g.querySelectorAll('polygon');
      return {cell: Number(g.dataset.cell), cell_box: box(poly), heat_box: box(heat), texts,
              fills: [getComputedStyle(poly).fill, getComputedStyle(heat).fill]};
    });"""


def test_the_3d_view_keeps_marks_numbers_and_values_in_their_cells_at_every_tilt(server_url, browser, artifacts):
    start(browser, server_url, "4x4x4", "human", "checkpoint:dqn_444")
    for move in ("1,1,1", "0,0,0"):
        before = moves_shown(browser)
        browser.find_element(By.ID, "move-input").send_keys(move + "\n")
        waiting(browser).until(lambda d, n=before: moves_shown(d) >= n + 2)
    show_3d(browser)
    browser.find_element(By.ID, "hint-toggle").click()
    waiting(browser).until(lambda d: "Hint: dqn_444" in d.find_element(By.ID, "hint-info").text)
    browser.execute_script("document.activeElement.blur();")
    for keys, tilt in (("", "30"), (Keys.ARROW_DOWN * 2, "20"), (Keys.ARROW_UP * 4, "40")):
        webdriver.ActionChains(browser, duration=0).send_keys(keys).perform() if keys else None
        assert browser.find_element(By.CSS_SELECTOR, "svg.scene").get_attribute("data-tilt") == tilt
        cells = browser.execute_script(TEXTS_3D)
        marked = [c for c in cells if "mark" in c["texts"]]
        assert len(marked) == 4 and sum("val" in c["texts"] for c in cells) == 60
        for c in cells:
            left, top, right, bottom = c["cell_box"]
            boxes = {name: b for name, (_, b) in c["texts"].items()}
            for x0, y0, x1, y1 in boxes.values():  # each text within its cell's shape on screen
                assert left - 0.5 <= x0 and x1 <= right + 0.5 and top - 0.5 <= y0 and y1 <= bottom + 0.5, (tilt, c)
            if "val" in boxes:  # the number stays beside its value, neither over the other
                assert c["texts"]["num"][0] == str(c["cell"]), (tilt, c)
                # the hint's colour inside a white edge, where the cell's rings are drawn
                assert c["fills"][0] == "rgb(255, 255, 255)" and c["fills"][1] != c["fills"][0], (tilt, c)
                inner = c["heat_box"]
                assert min(inner[0] - left, inner[1] - top, right - inner[2], bottom - inner[3]) >= 2, (tilt, c)
                (_, _, num_right, num_bottom), (val_left, val_top, _, _) = boxes["num"], boxes["val"]
                assert num_right <= val_left + 0.5 or num_bottom <= val_top + 0.5, (tilt, c)
        browser.save_screenshot(str(artifacts / f"qubic_3d_tilt_{tilt}.png"))
    browser.find_element(By.ID, "hint-toggle").click()
    browser.find_element(By.ID, "view3d").click()


def luminance(css: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", css)[:3])
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_a_lost_position_is_readable_on_red_and_names_no_best_move(server_url, browser, artifacts):
    """Perfect X against O (a person) on 3x3, with the hint on: O blocks X's threats and otherwise plays a move
    the hint values -1, until X forks. Red cells keep their numbers readable and their rings edged in white;
    the lost position names no best move."""
    start(browser, server_url, "3x3", "perfect", "human")
    wait = waiting(browser)
    browser.find_element(By.ID, "hint-toggle").click()
    info = lambda: browser.find_element(By.ID, "hint-info").text  # noqa: E731
    for _ in range(4):
        wait.until(lambda d: "O to move" in d.find_element(By.ID, "status").text and "Hint: perfect" in info())
        values = {int(c.get_attribute("data-cell")): float(c.find_element(By.CSS_SELECTOR, ".val").text)
                  for c in browser.find_elements(By.CSS_SELECTOR, ".cell.playable")}
        if max(values.values()) == -1:
            break
        assert "its best move" in info()
        threat = browser.find_elements(By.CSS_SELECTOR, ".cell.open-x")
        move = int(threat[0].get_attribute("data-cell")) if threat else min(values, key=values.get)
        before = moves_shown(browser)
        browser.find_element(By.CSS_SELECTOR, f'.cell[data-cell="{move}"]').click()
        wait.until(lambda d, n=before: moves_shown(d) >= n + 2)
    assert set(values.values()) == {-1.0}, values  # X has forked: every move of O loses
    assert "every move loses" in info() and "best move" not in info(), info()
    red = [browser.find_element(By.CSS_SELECTOR, f'.cell[data-cell="{c}"]') for c in values]
    webdriver.ActionChains(browser, duration=0).move_to_element(red[0]).perform()
    for cell in red:
        background = cell.value_of_css_property("background-color")
        number = cell.find_element(By.CSS_SELECTOR, ".num").value_of_css_property("color")
        assert contrast(number, background) >= 4.5, (cell.get_attribute("data-cell"), number, background)
        if "hl" in cell.get_attribute("class"):  # a line's ring, edged in white against the heat colour
            assert "rgb(255, 255, 255)" in cell.value_of_css_property("box-shadow")
    open_cells = browser.find_elements(By.CSS_SELECTOR, ".cell.open-x")
    assert open_cells  # X's threats, each ringed, the ring edged in white on both sides
    for cell in open_cells:
        edge = browser.execute_script("return getComputedStyle(arguments[0], '::after').boxShadow;", cell)
        assert edge.count("rgb(255, 255, 255)") == 2, edge
    browser.save_screenshot(str(artifacts / "lost_3x3.png"))


def test_the_first_key_is_a_shortcut_and_only_ascii_digits_make_a_move(server_url, browser):
    browser.get(server_url)
    waiting(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".cell") and d.find_element(By.ID, "status").text)
    assert browser.execute_script("return document.activeElement.tagName;") == "BODY"
    webdriver.ActionChains(browser, duration=0).send_keys("h").perform()
    assert browser.find_element(By.ID, "hint-toggle").is_selected()
    assert browser.find_element(By.ID, "move-input").get_attribute("value") == ""
    for text in ("\u0663", "\uff13", "\u0967,\u0967,\u0967"):  # Arabic-Indic 3, fullwidth 3, Devanagari 1,1,1
        browser.find_element(By.ID, "move-input").send_keys(text + "\n")
        waiting(browser).until(lambda d: "is not a move" in d.find_element(By.ID, "error").text)
        browser.execute_script("document.getElementById('error').textContent = '';")
    assert moves_shown(browser) == 0


# the page's requests through a stand-in for fetch: the next /step answered 503 once, or held a while
BUSY_ONCE = """
    const real = window.fetch;
    let left = 1;
    window.fetch = (path, init) => String(path).endsWith("/step") && left-- > 0
      ? Promise.resolve(new Response(JSON.stringify({error: "busy: 8 agents are searching"}),
          {status: 503, headers: {"Retry-After": "1", "Content-Type": "application/json"}}))
      : real(path, init);"""
SLOW_STEP = """
    const real = window.fetch;
    window.fetch = (path, init) => String(path).endsWith("/step")
      ? new Promise((resolve) => setTimeout(resolve, 1500)).then(() => real(path, init)) : real(path, init);"""


def test_a_busy_server_is_asked_again_after_its_retry_after(server_url, browser):
    start(browser, server_url, "3x3", "human", "benchmark")
    browser.execute_script(BUSY_ONCE)
    browser.find_element(By.CSS_SELECTOR, '.cell[data-cell="4"]').click()
    wait = waiting(browser)
    wait.until(lambda d: "asking again in 1 s" in d.find_element(By.ID, "error").text)
    wait.until(lambda d: moves_shown(d) == 2)  # the agent's reply, asked again after a second
    assert not browser.find_element(By.ID, "error").text
    assert "X to move" in browser.find_element(By.ID, "status").text


def test_a_click_while_the_agent_thinks_is_played_after_its_reply(server_url, browser):
    start(browser, server_url, "3x3", "human", "benchmark")
    browser.execute_script(SLOW_STEP)
    wait = waiting(browser)
    browser.find_element(By.CSS_SELECTOR, '.cell[data-cell="4"]').click()
    status = browser.find_element(By.ID, "status")
    wait.until(lambda d: "thinking" in status.text and "thinking" in status.get_attribute("class"))
    assert browser.find_element(By.ID, "board-area").get_attribute("aria-busy") == "true"
    browser.find_element(By.CSS_SELECTOR, '.cell[data-cell="0"]').click()  # during the agent's move
    assert "Your move 0 (0,0) follows" in status.text
    wait.until(lambda d: moves_shown(d) == 3 or d.find_element(By.ID, "error").text)
    if played(browser)[1] == 0:  # the agent took that cell: the server says so, the click is not lost
        assert "occupied" in browser.find_element(By.ID, "error").text
    else:
        assert played(browser)[::2] == [4, 0]
        wait.until(lambda d: moves_shown(d) == 4)  # and the agent's reply to it
    assert "X to move" in status.text and "thinking" not in status.text + status.get_attribute("class")
