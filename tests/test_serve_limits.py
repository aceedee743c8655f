"""The bounds on one client's work in ``python -m ttt.serve``: caps on simulations and depth refused with a
400 naming them, options checked for finite values, a search stopped at ``max_seconds`` with the game
kept, ``max_searches`` at once, a search dropped when its client goes away, bodies nested too deep, sent
too slowly or dropped half way, a path that tries to write a log line of its own, and Ctrl-C or SIGTERM
ending the server within 5 s while 40 searches run (a subprocess, marker ``cli``)."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed")
from test_serve import local_client  # noqa: E402

import ttt.web.app as web_app  # noqa: E402
from ttt.games import FIRST  # noqa: E402
from ttt.harness.specs import load_agents  # noqa: E402
from ttt.players.stop import SearchStopped, Stop, check_stop, stopping  # noqa: E402
from ttt.serve import listen, url_of  # noqa: E402
from ttt.web.app import create_app  # noqa: E402
from ttt.web.limits import Limits  # noqa: E402

QUBIC_SEARCH = {"board": "4x4x4", "x": "mcts:20000", "o": "human"}  # about 5 s for its first move on one core


def new_game(client, status=201, **seats):
    r = client.post("/api/games", json={"board": "3x3", "x": "human", "o": "random", **seats})
    assert r.status_code == status, r.text
    return r.json()


@pytest.mark.parametrize("seat, cap", [("mcts:100000000", "max_simulations=20000"),
                                       ("mcts:simulations=20001:c=1", "max_simulations=20000"),
                                       ("alphabeta:7", "max_depth=6"),
                                       ("alphabeta:depth=None", "max_depth=6")])
def test_a_search_over_a_cap_is_refused_with_a_400_naming_it(seat, cap):
    with local_client(create_app(None)) as client:
        error = new_game(client, 400, board="4x4x4", o=seat)["error"]
        assert cap in error and "\n" not in error, error
        new_game(client, board="4x4x4", o="mcts:20000")  # at the cap: served
        new_game(client, board="4x4x4", o="alphabeta:6")


def test_the_caps_are_the_servers_own():
    limits = Limits(max_simulations=50, max_depth=2, max_seconds=5, max_searches=1)
    with local_client(create_app(None, limits=limits)) as client:
        assert "max_simulations=50" in new_game(client, 400, o="mcts:51")["error"]
        assert "max_depth=2" in new_game(client, 400, o="alphabeta:3")["error"]
        assert "9 plies" in new_game(client, 400, o="alphabeta:depth=None")["error"]  # to the end of 3x3
        new_game(client, o="mcts:50")
        new_game(client, o="alphabeta:2")
    pytest.importorskip("pyspiel")
    with local_client(create_app(None, limits=limits)) as client:
        assert "60 simulations" in new_game(client, 400, o="openspiel_mcts:simulations=20:rollouts=3")["error"]
    for bad, text in [({"max_seconds": 0}, "max_seconds must be a number above 0"),
                      ({"max_searches": 1000}, "max_searches must be at most 256"),
                      ({"max_depth": 2.5}, "max_depth must be a whole number")]:
        with pytest.raises(ValueError, match=text):
            Limits(**bad)


@pytest.mark.parametrize("seat, text", [("mcts:c=nan", "must be a finite number, got nan"),
                                        ("mcts:c=inf", "must be a finite number, got inf"),
                                        ("mcts:c=-5", "c must be a finite number >= 0, got -5"),
                                        ("mcts:c=1e999", "must be a finite number, got inf")])
def test_options_must_be_finite_and_sensible_in_every_command(seat, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        load_agents([seat], "3x3")  # ttt.benchmark and ttt.play name players through it too
    with local_client(create_app(None)) as client:
        assert text in new_game(client, 400, o=seat)["error"]


def test_a_seat_with_a_control_character_is_refused():
    with local_client(create_app(None)) as client:
        assert "no control characters" in new_game(client, 400, o="mcts:\n5")["error"]


def test_a_search_is_stopped_by_its_thread_stop_and_nowhere_else():
    check_stop()  # no Stop set: nothing happens
    stop = Stop()
    with stopping(stop):
        check_stop()
        stop.stop("enough")
        with pytest.raises(SearchStopped, match="enough"):
            check_stop()
    check_stop()  # outside the block again
    with stopping(Stop(0)), pytest.raises(SearchStopped) as stopped:
        check_stop()
    assert stopped.value.reason == "time"


@pytest.mark.parametrize("x", ["mcts:20000", "alphabeta:6", "openspiel_mcts:20000"])
def test_a_move_or_hint_past_max_seconds_is_a_400_naming_the_cap_and_the_game_is_kept(x):
    if x.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    app = create_app(None, limits=Limits(max_seconds=0.3))
    with local_client(app) as client:
        game = new_game(client, board="4x4x4", x=x, o="human")
        verbs = (("step", client.post), ("hint", client.get))
        for verb, method in verbs[:1] if x.startswith("openspiel") else verbs:  # it has no move values
            start = time.monotonic()
            r = method(f"/api/games/{game['id']}/{verb}", **({"json": {}} if verb == "step" else {}))
            assert r.status_code == 400 and "max_seconds=0.3" in r.json()["error"], r.text
            assert time.monotonic() - start < 3
        view = client.get(f"/api/games/{game['id']}").json()
        assert view["moves"] == [] and view["to_play"] == "X"
        _, player = app.state.table.get(game["id"]).seats[FIRST]
        assert not getattr(player, "last_roots", None)  # the stopped search's tree is let go


def test_a_game_keeps_no_search_tree_between_requests():
    app = create_app(None)
    with local_client(app) as client:
        game = new_game(client, x="mcts:200", o="human")
        _, player = app.state.table.get(game["id"]).seats[FIRST]
        assert client.get(f"/api/games/{game['id']}/hint").status_code == 200 and player.last_roots == []
        assert client.post(f"/api/games/{game['id']}/step", json={}).status_code == 200 and player.last_roots == []
        player.search([player.game.initial_state()])
        assert player.last_roots  # what the server lets go of


@pytest.mark.parametrize("body, text", [("[" * 2000 + "]" * 2000, "nests arrays or objects over 8 deep"),
                                        ('{"move": ' + "[" * 9 + "]" * 9 + "}", "over 8 deep"),
                                        ('{"move": "' + "[" * 20 + '"}', "is not a move")])  # inside a string
def test_json_nested_too_deep_is_a_400(body, text):
    with local_client(create_app(None)) as client:
        game = new_game(client)
        r = client.post(f"/api/games/{game['id']}/move", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400 and text in r.json()["error"], r.text


def test_a_newline_in_the_path_cannot_write_a_log_line(caplog):
    with caplog.at_level("INFO", logger="ttt.serve"), local_client(create_app(None)) as client:
        assert client.get("/api/games/x%0a2026-01-01 12:00:00,000 GET / 200 1.0 ms").status_code == 404
    lines = [r.getMessage() for r in caplog.records if r.name == "ttt.serve"]
    assert any(r"/api/games/x\n2026-01-01" in line for line in lines), lines
    assert not any("\n" in line or "\r" in line for line in lines), lines


# ------------------------------------------------------------------------ a real server in a thread
@pytest.fixture
def served(request):
    """(url, app) of an app served by uvicorn in a thread (its ``Limits`` from the test's parameter)."""
    import uvicorn

    app = create_app(None, limits=getattr(request, "param", Limits()))
    sock = listen("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield url_of(sock), app
    app.state.searches.stop_all()
    server.should_exit = True
    thread.join(timeout=5)


def raw_request(url: str, head: str, body: bytes = b"") -> socket.socket:
    host, port = re.match(r"http://([^:/]+):(\d+)/", url).groups()
    conn = socket.create_connection((host, int(port)))
    conn.sendall(head.encode() + b"\r\n" + body)
    return conn


def read_answer(conn: socket.socket) -> str:
    """The whole HTTP answer: its head and ``Content-Length`` bytes of body, however many packets they take."""
    data = b""
    while True:
        head, sep, body = data.partition(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        if sep and length and len(body) >= int(length.group(1)):
            return data.decode()
        chunk = conn.recv(4096)
        if not chunk:
            return data.decode()
        data += chunk


def wait_for(condition, seconds: float, seen=lambda: None) -> float:
    """Seconds until ``condition()`` held; fails after ``seconds``, showing ``seen()``."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < seconds, f"timed out; seen: {seen()}"
        time.sleep(0.02)
    return time.monotonic() - start


def log_line(caplog, pattern: str) -> bool:
    return any(re.search(pattern, r.getMessage()) for r in caplog.records if r.name == "ttt.serve")


@pytest.mark.parametrize("served", [Limits(max_seconds=60, max_simulations=400000)], indirect=True)
def test_a_search_is_dropped_when_its_client_goes_away(served, caplog):
    import httpx2 as httpx

    url, app = served
    # a search of about a minute: one of 20,000 simulations (3-5 s) can end of itself before the server sees
    # the client go, and is then logged 200 (a CI run timed out waiting for the 499)
    game = httpx.post(f"{url}api/games", json={**QUBIC_SEARCH, "x": "mcts:400000"}).json()
    with caplog.at_level("INFO", logger="ttt.serve"):
        conn = raw_request(url, f"POST /api/games/{game['id']}/step HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Content-Length: 0\r\n")
        wait_for(lambda: app.state.searches.running, 5)  # searching
        time.sleep(0.3)
        conn.close()
        seconds = wait_for(lambda: not app.state.searches.running, 3)
        wait_for(lambda: log_line(caplog, rf"POST /api/games/{game['id']}/step 499 "), 5,
                 lambda: [r.getMessage() for r in caplog.records if r.name == "ttt.serve"])
    assert seconds < 1.5, seconds
    assert httpx.get(f"{url}api/games/{game['id']}").json()["moves"] == []  # no move was made for nobody
    assert not log_line(caplog, r" 500 ")


@pytest.mark.parametrize("served", [Limits(max_searches=1, max_seconds=60, max_simulations=400000)], indirect=True)
def test_searches_at_once_are_capped_and_the_rest_of_the_api_answers(served):
    import httpx2 as httpx

    url, app = served
    # a search of about a minute (stopped when the test ends): the second request cannot find the slot free
    # (one of 20,000 simulations, about 3 s, once ended before the second request came, on a loaded machine)
    seats = {**QUBIC_SEARCH, "x": "mcts:400000"}
    first, second = (httpx.post(f"{url}api/games", json=seats).json() for _ in range(2))
    conn = raw_request(url, f"POST /api/games/{first['id']}/step HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n")
    try:
        wait_for(lambda: app.state.searches.running, 5)
        r = httpx.post(f"{url}api/games/{second['id']}/step", json={})
        if r.status_code != 503:  # say what became of the first search
            conn.settimeout(2)
            try:
                first_answer = read_answer(conn)[:300]
            except TimeoutError:
                first_answer = "still searching"
            pytest.fail(f"second search answered {r.status_code} ({r.text[:200]}); the first: {first_answer}")
        assert "max_searches=1" in r.json()["error"], r.text
        assert r.headers["retry-after"] == "1"
        # the rest of the API answers while the first search runs, not after it: on a loaded machine the threads
        # of this one process share its slice of a core, so the time it takes is no measure (once over 5 s)
        assert httpx.get(f"{url}api/options", timeout=30).status_code == 200
        assert app.state.searches.running, "the first search ended before the API answered"
    finally:
        conn.close()


def test_a_body_dropped_half_way_is_logged_as_499_and_a_slow_one_gets_408(served, caplog, monkeypatch):
    url, _ = served
    monkeypatch.setattr(web_app, "BODY_SECONDS", 0.5)
    head = "POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n"
    with caplog.at_level("INFO", logger="ttt.serve"):
        raw_request(url, head, b'{"board": ').close()
        wait_for(lambda: log_line(caplog, r"POST /api/games 499 "), 3)
        conn = raw_request(url, head, b'{"board": ')
        conn.settimeout(5)
        answer = read_answer(conn)
        conn.close()
    assert answer.startswith("HTTP/1.1 408") and "took over 0.5 s to arrive" in answer, answer
    assert not log_line(caplog, r" 500 ") and "Traceback" not in caplog.text and "ClientDisconnect" not in caplog.text


# ------------------------------------------------------------------------ the command, stopped under load
@pytest.mark.cli
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_the_server_within_5_s_while_40_searches_run(signum, tmp_path):
    import httpx2 as httpx

    # searches of 400,000 simulations: none can end before the signal, however the 40 threads share the cores
    # (at 20,000 one thread that held the interpreter long enough finished its move first)
    proc = subprocess.Popen([sys.executable, "-m", "ttt.serve", "port=0", "max_searches=40", "max_seconds=120",
                             "max_simulations=400000", "max_games_per_client=40", f"checkpoints={tmp_path}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"serving (http://\S+/)", proc.stdout.readline()).group(1)
        long_search = {**QUBIC_SEARCH, "x": "mcts:400000"}
        games = [httpx.post(f"{url}api/games", json=long_search, timeout=20).json()["id"] for _ in range(40)]
        answers = []

        def step(game_id):
            try:
                r = httpx.post(f"{url}api/games/{game_id}/step", json={}, timeout=60)
                answers.append((r.status_code, r.json().get("error", r.text[:200])))
            except httpx.HTTPError as e:
                answers.append(repr(e))

        threads = [threading.Thread(target=step, args=(g,)) for g in games]
        for t in threads:
            t.start()
        time.sleep(2)  # every search under way (40 threads on the machine's cores)
        assert httpx.get(f"{url}api/options", timeout=60).status_code == 200  # the API still answers
        start = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        seconds = time.monotonic() - start
        for t in threads:
            t.join(timeout=10)
    finally:
        proc.kill()
    assert seconds < 5, seconds
    assert proc.returncode == 130 and err.endswith("interrupted\n"), err[-2000:]
    assert answers == [(503, "the server is stopping")] * 40, answers
    assert "Traceback" not in err
