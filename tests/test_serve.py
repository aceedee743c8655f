"""ttt.serve's API through Starlette's test client: whole games, typed moves, hints (with the values the
rules decide), undo, open and winning lines, every kind of bad request as a one-line 4xx, a failing
agent as a 500 the server survives, the caps on games, the page's files; and the command itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed")
from starlette.testclient import TestClient  # noqa: E402
from test_play import LowestCellPlayer  # noqa: E402  (a predictable opponent)

from ttt.agents import load_player  # noqa: E402
from ttt.games import FIRST, SECOND, make_game  # noqa: E402
from ttt.harness.specs import (
    SHIPPED_CHECKPOINT,  # noqa: E402
    load_agents,  # noqa: E402
)
from ttt.players import PLAYERS, Player  # noqa: E402
from ttt.players.human import move_hint, open_lines, winning_line  # noqa: E402
from ttt.serve import SHIPPED_FOLDER, is_loopback, serve  # noqa: E402
from ttt.web.app import MAX_BODY, create_app  # noqa: E402
from ttt.web.games import HUMAN, GameTable, RequestError, WebGame  # noqa: E402


class BrokenPlayer(Player):
    """Raises on every move: a failing agent."""

    name = "broken"

    def act(self, state, rng):
        raise RuntimeError("out of cheese\nsecond line")


class CheatingPlayer(Player):
    """Answers an occupied cell."""

    name = "cheat"

    def act(self, state, rng):
        return next(c for c, v in enumerate(state.board) if v != 0) if state.num_moves else 0


@pytest.fixture(autouse=True)
def test_players(monkeypatch):
    for cls in (LowestCellPlayer, BrokenPlayer, CheatingPlayer):
        monkeypatch.setitem(PLAYERS, cls.name, cls)


def local_client(app) -> TestClient:
    """A test client that asks for ``app`` as http://127.0.0.1, one of the names it serves."""
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture
def client(tmp_path):
    """A client of an app whose checkpoint folder is empty (no checkpoint is loaded)."""
    with local_client(create_app(tmp_path)) as c:
        yield c


def new(client, board="3x3", x="human", o="lowest"):
    r = client.post("/api/games", json={"board": board, "x": x, "o": o})
    assert r.status_code == 201, r.text
    return r.json()


def post(client, game, verb, body=None):
    return client.post(f"/api/games/{game['id']}/{verb}", json=body if body is not None else {})


def one_line_error(r, status, text):
    assert r.status_code == status, r.text
    message = r.json()["error"]
    assert "\n" not in message and text in message, message


def test_a_whole_game_against_an_agent():
    with local_client(create_app(None)) as client:
        g = new(client)
        assert g["board"] == {"name": "3x3", "n": 3, "d": 2, "gravity": False, "k": 3, "cells": 9,
                              "syntax": "a cell number (0-8) or row,col"}
        assert g["seats"] == {"X": {"label": "human", "human": True}, "O": {"label": "lowest", "human": False}}
        assert len(g["lines"]) == 8 and g["to_play"] == "X" and g["last"] is None
        g = post(client, g, "move", {"move": 4}).json()
        one_line_error(post(client, g, "move", {"move": 2}), 409, "it is O's turn, and lowest plays O")
        g = post(client, g, "step").json()  # lowest takes 0
        g = post(client, g, "move", {"move": "0,2"}).json()  # typed as in ttt.play: cell 2
        assert {"mark": "X", "cells": [2, 4, 6], "empty": 6} in g["open_lines"]
        g = post(client, g, "step").json()  # lowest takes 1
        assert g["last"] == 1 and g["cells"][:3] == ["O", "O", "X"]
        g = post(client, g, "move", {"move": "2,0"}).json()  # 6: X completes 2-4-6
        assert g["over"] and g["result"] == "X (human) wins" and g["win_line"] == [2, 4, 6] and g["last"] == 6
        assert [m["cell"] for m in g["moves"]] == [4, 0, 2, 1, 6]
        assert g["moves"][2] == {"ply": 3, "mark": "X", "cell": 2, "label": "0,2"}
        assert g["legal"] == [] and g["to_play"] is None
        one_line_error(post(client, g, "step"), 409, "the game is over")
        record = client.get(f"/api/games/{g['id']}/record")
        assert record.status_code == 200
        assert record.headers["content-disposition"] == f'attachment; filename="ttt-3x3-{g["id"]}.json"'
        data = record.json()
        assert data["players"] == {"X": "human", "O": "lowest"} and data["winner"] == "X"
        assert data["win_line"] == [2, 4, 6] and len(data["moves"]) == 5 and data["result"] == "X (human) wins"
        assert client.delete(f"/api/games/{g['id']}").json() == {"deleted": g["id"]}
        one_line_error(client.get(f"/api/games/{g['id']}"), 404, "no such game")
        one_line_error(client.delete(f"/api/games/{g['id']}"), 404, "no such game")


def test_agents_against_each_other_step_by_step_and_undo_one_ply(client):
    g = new(client, "4x4x4_gravity", "lowest", "random")
    one_line_error(post(client, g, "move", {"move": 0}), 409, "it is X's turn, and lowest plays X")
    for _ in range(4):
        g = post(client, g, "step").json()
    assert len(g["moves"]) == 4 and g["moves"][0]["cell"] == 0
    g = post(client, g, "undo").json()
    assert len(g["moves"]) == 3  # no person: one ply back


def test_undo_goes_back_to_the_persons_turn(client):
    g = new(client, "3x3", "lowest", "human")  # the agent opens
    one_line_error(post(client, g, "undo"), 409, "nothing to undo")
    g = post(client, g, "step").json()
    one_line_error(post(client, g, "undo"), 409, "nothing to undo")  # the agent's opening stays
    g = post(client, g, "move", {"move": 4}).json()
    g = post(client, g, "step").json()
    g = post(client, g, "undo").json()
    assert [m["cell"] for m in g["moves"]] == [0] and g["to_play"] == "O"


def test_moves_are_typed_as_in_the_terminal(client):
    g = new(client, "3x3x3")
    g = post(client, g, "move", {"move": "0,1,2"}).json()
    assert g["moves"][0]["cell"] == 5
    g = new(client, "4x4x4_gravity", "human", "human")
    g = post(client, g, "move", {"move": "1,1"}).json()  # a column: drops to layer 0
    g = post(client, g, "move", {"move": "1,1"}).json()  # then to layer 1
    assert [m["label"] for m in g["moves"]] == ["0,1,1", "1,1,1"]
    one_line_error(post(client, g, "move", {"move": 5}), 400, "5 is not legal: cell 0,1,1 is occupied")
    one_line_error(post(client, g, "move", {"move": 32}), 400, "32 is not legal: cell 2,0,0 is not reachable yet")
    one_line_error(post(client, g, "move", {"move": "hello"}), 400, "'hello' is not a move: type a cell number")
    one_line_error(post(client, g, "move", {"move": True}), 400, "a move is a cell number")
    one_line_error(post(client, g, "move", {"move": [1, 2]}), 400, "a move is a cell number")


def test_a_huge_or_non_ascii_move_gets_a_short_error(client):
    g = new(client, "4x4x4", "human", "human")
    r = client.post(f"/api/games/{g['id']}/move", content='{"move": ' + "9" * 4000 + "}",
                    headers={"content-type": "application/json"})
    one_line_error(r, 400, "'9999999999...' (4000 digits) is out of range: the cells are 0..63")
    assert len(r.text) < 100, len(r.text)  # the number is named, not repeated
    r = post(client, g, "move", {"move": "x" * 40})
    one_line_error(r, 400, "'xxxxxxxxxxxxxxxxxxxx'... (40 characters) is not a move")
    for text in ("\u0663", "\uff13", "1,\u0661,1", "\u0968\u0967"):  # Arabic-Indic, fullwidth, Devanagari digits
        one_line_error(post(client, g, "move", {"move": text}), 400, "is not a move")
    assert client.get(f"/api/games/{g['id']}").json()["moves"] == []


def test_bad_requests_get_one_line_and_a_4xx(client):
    one_line_error(client.post("/api/games", json={"board": "5x5", "x": "human", "o": "random"}), 400,
                   "unknown board '5x5'")
    one_line_error(client.post("/api/games", json={"board": "3x3", "x": "human"}), 400, "missing key 'o'")
    one_line_error(client.post("/api/games", json={"board": "3x3", "x": "human", "o": "random", "p": 1}), 400,
                   "unknown key 'p'")
    one_line_error(client.post("/api/games", json=["3x3"]), 400, "must be a JSON object")
    one_line_error(client.post("/api/games", content=b"{not json"), 400, "not JSON")
    one_line_error(client.post("/api/games", content=b"{}" + b" " * MAX_BODY), 413, f"over {MAX_BODY} bytes")
    chunks = iter([b"{", b" " * MAX_BODY, b"}"])  # sent chunked, with no length announced
    one_line_error(client.post("/api/games", content=chunks), 413, f"over {MAX_BODY} bytes")
    one_line_error(client.post("/api/games", json={"board": "3x3", "x": "human", "o": "zz"}), 400,
                   "unknown player 'zz'")
    one_line_error(client.post("/api/games", json={"board": "3x3", "x": "human", "o": "alphabeta:1:2:3"}), 400,
                   "alphabeta takes the options")
    one_line_error(client.post("/api/games", json={"board": "3x3", "x": "human", "o": "x" * 101}), 400,
                   "at most 100 characters")
    one_line_error(client.post("/api/games", json={"board": "4x4x4", "x": "human", "o": "perfect"}), 400,
                   "perfect play is available on")
    one_line_error(client.get("/api/games/0123456789abcdef"), 404, "no such game")
    one_line_error(client.get("/api/nothing"), 404, "Not Found")
    one_line_error(client.put("/api/games"), 405, "Method Not Allowed")


GAME = {"board": "3x3", "x": "human", "o": "random"}


def test_another_sites_page_cannot_drive_the_api():
    app = create_app(None)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        text_plain = {"content-type": "text/plain"}  # a simple request: the browser sends it without asking
        for headers in ({"origin": "http://evil.test"}, {"origin": "http://localhost:8000"}, {"origin": "null"},
                        {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"}):
            r = client.post("/api/games", content=json.dumps(GAME), headers={**text_plain, **headers})
            one_line_error(r, 403, "the API answers its own page only")
        assert len(app.state.table) == 0
        for headers in ({"origin": "http://127.0.0.1:8000", "sec-fetch-site": "same-origin"}, {}):  # its page; curl
            assert client.post("/api/games", json=GAME, headers=headers).status_code == 201
        assert client.get("/", headers={"sec-fetch-site": "cross-site"}).status_code == 200  # a link to the page


@pytest.mark.parametrize("host, served, refused", [
    ("127.0.0.1", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "localhost", "LocalHost:80"],
     ["evil.test:8000", "127.0.0.1.evil.test", "192.168.1.5:8000", "[::2]:8000", ""]),
    ("192.168.1.5", ["192.168.1.5:8000", "127.0.0.1:8000"], ["192.168.1.6:8000", "evil.test"]),
    ("0.0.0.0", ["192.168.1.5:8000", "[fe80::1]:8000", "localhost:8000"], ["evil.test:8000", "192.168.1.5.nip.io"]),
    ("[::]", ["[2001:db8::5]:8000", "10.0.0.7"], ["evil.test"]),
])
def test_the_server_answers_only_for_its_own_names(host, served, refused):
    app = create_app(None, host=host)
    with TestClient(app) as client:
        for name in served:
            assert client.get("/", headers={"host": name}).status_code == 200, name
        for name in refused:  # a name made to resolve to this machine (DNS rebinding) reaches nothing
            for r in (client.get("/", headers={"host": name}),
                      client.post("/api/games", json=GAME, headers={"host": name})):
                one_line_error(r, 403, f"host {name!r} is not one of this server's names")
        assert len(app.state.table) == 0


def test_no_client_text_reaches_the_file_system(client, tmp_path):
    secret = tmp_path / "elsewhere" / "checkpoint.pt"
    secret.parent.mkdir()
    secret.write_bytes(Path(SHIPPED_CHECKPOINT).read_bytes())
    for spec in (str(secret), "../elsewhere/checkpoint.pt", "x.pt", {"checkpoint": str(secret)}):
        r = client.post("/api/games", json={"board": "4x4x4", "x": "human", "o": spec})
        assert r.status_code == 400, spec
    one_line_error(client.post("/api/games", json={"board": "4x4x4", "x": "human", "o": str(secret)}), 400,
                   "a checkpoint is chosen by name")
    one_line_error(client.post("/api/games", json={"board": "4x4x4", "x": "human", "o": "checkpoint:../elsewhere"}),
                   400, "no checkpoint named '../elsewhere' on this server (it has: elsewhere)")
    assert client.get("/api/options").json()["checkpoints"] == [{"name": "elsewhere", "board": "4x4x4"}]
    assert client.get("/static/..%2Fgames.py").status_code == 404
    assert client.get("/static/../web/games.py").status_code == 404


def test_a_failing_agent_is_a_500_and_the_server_lives_on(client):
    g = new(client, "3x3", "human", "broken")
    g = post(client, g, "move", {"move": 4}).json()
    one_line_error(post(client, g, "step"), 500, "broken failed to move: out of cheese")
    assert client.get(f"/api/games/{g['id']}").json()["moves"] == g["moves"]  # nothing changed
    g = new(client, "3x3", "human", "cheat")
    g = post(client, g, "move", {"move": 4}).json()
    one_line_error(post(client, g, "step"), 500, "cheat failed to move: action 4 on 3x3: cell 1,1 is occupied")
    assert client.get("/api/options").status_code == 200


def test_hints_come_from_the_agent_with_a_reason_when_there_are_none(client):
    g = new(client, "3x3", "human", "lowest")
    hint = client.get(f"/api/games/{g['id']}/hint").json()
    assert hint["source"] == "lowest" and hint["for"] == "X"
    assert hint["values"][:2] == [{"cell": 0, "value": 0.0, "rules": False}, {"cell": 1, "value": -0.1, "rules": False}]
    g = new(client, "3x3", "human", "random")
    assert client.get(f"/api/games/{g['id']}/hint").json()["reason"] == "random has no move values"
    g = new(client, "3x3", "human", "human")
    assert client.get(f"/api/games/{g['id']}/hint").json()["reason"] == "no agent sits in this game"


def test_a_lost_position_has_no_best_move():
    game = make_game("3x3")
    _, [(label, perfect)] = load_agents(["perfect"], "3x3")
    web = WebGame("0", game, {FIRST: (HUMAN, None), SECOND: (label, perfect)}, seed=0)
    assert web.hint()["best"] == 0  # every move draws: the first of the best
    board = [0] * 9
    for c in (1, 5, 7):
        board[c] = 1
    for c in (0, 2, 4):
        board[c] = -1  # O threatens 6 and 8: X loses whatever it plays
    web.states.append(game.state_from_board(board))
    hint = web.hint()
    assert [v["value"] for v in hint["values"]] == [-1.0] * 3 and hint["best"] is None
    board[8] = 1
    board[3] = -1  # one threat blocked: X's best is 6
    web.states.append(game.state_from_board(board))
    assert web.hint()["best"] == 6


def test_the_hint_marks_the_values_the_rules_decide():
    player = load_player(SHIPPED_CHECKPOINT)
    game = player.game
    board = [0] * 64
    board[0] = board[1] = board[2] = 1  # X threatens 3
    board[16] = board[17] = board[18] = -1  # O threatens 19
    state = game.state_from_board(board)
    hint = move_hint(player, state)
    assert hint.values[3] == 1.0 and 3 in hint.by_rules  # the win
    assert hint.values[40] == -1.0 and 40 in hint.by_rules  # leaves O its win
    alone = player.without_rules().action_values(state)
    assert all((alone[a] != v) == (a in hint.by_rules) for a, v in hint.values.items())
    assert {(p, e) for p, _, e in open_lines(state)} == {(1, 3), (-1, 19)}
    assert winning_line(state.apply(3)) == (0, 1, 2, 3) and winning_line(state) is None


def test_the_shipped_network_plays_and_hints_through_the_api():
    with local_client(create_app(SHIPPED_FOLDER)) as client:
        options = client.get("/api/options").json()
        assert {"name": "dqn_444", "board": "4x4x4"} in options["checkpoints"]
        assert options["default"] == {"board": "4x4x4", "x": "human", "o": "checkpoint:dqn_444"}
        assert {"random", "benchmark", "alphabeta:2", "mcts:200", "perfect"} <= set(options["specs"])
        one_line_error(client.post("/api/games", json={"board": "3x3", "x": "human", "o": "checkpoint:dqn_444"}),
                       400, "checkpoint dqn_444 plays 4x4x4, not 3x3")
        g = new(client, "4x4x4", "human", "checkpoint:dqn_444")
        g = post(client, g, "move", {"move": "1,1,1"}).json()
        g = post(client, g, "step").json()
        assert len(g["moves"]) == 2 and g["seats"]["O"]["label"] == "dqn_444"
        hint = client.get(f"/api/games/{g['id']}/hint").json()
        assert hint["source"] == "dqn_444" and len(hint["values"]) == 62


@pytest.mark.parametrize("name", ["alphazero_444", "dqn_444_plain"])
def test_the_other_shipped_players_play_through_the_api(name):
    with local_client(create_app(SHIPPED_FOLDER)) as client:
        assert {"name": name, "board": "4x4x4"} in client.get("/api/options").json()["checkpoints"]
        g = new(client, "4x4x4", "human", f"checkpoint:{name}")
        g = post(client, g, "move", {"move": "0,0,0"}).json()
        g = post(client, g, "step").json()
        assert len(g["moves"]) == 2 and g["seats"]["O"]["label"] == name


def test_games_are_capped_in_count_and_idle_time():
    now = [0.0]
    table = GameTable(max_games=2, max_idle_s=60, clock=lambda: now[0])
    seats = {1: ("human", None), -1: ("human", None)}
    a = table.new("3x3", seats, 0)
    now[0] = 1
    b = table.new("3x3", seats, 0)
    now[0] = 2
    table.get(a.id)  # a is used again: b is now the one unused longest
    c = table.new("3x3", seats, 0)
    assert len(table) == 2 and table.get(a.id) is a and table.get(c.id) is c
    with pytest.raises(RequestError, match=r"this game was dropped: the server was full \(2 games, max_games\)"):
        table.get(b.id)
    now[0] = 2 + 61
    with pytest.raises(RequestError, match="this game was dropped: it was unused longer than this server's "
                                           "max_idle_minutes=1; start a new one"):
        table.get(a.id)
    assert len(table) == 0
    with pytest.raises(RequestError, match="no such game: start a new one"):
        table.get("0123456789abcdef")


def test_one_client_cannot_push_out_anothers_games():
    app = create_app(None, max_games=4, max_games_per_client=2)
    alice, mallory, carol = (TestClient(app, base_url="http://127.0.0.1", client=(f"10.0.0.{i}", 5000))
                             for i in (1, 2, 3))
    mine = new(alice)
    theirs = [new(mallory) for _ in range(10)]  # mallory's own games make room for mallory's new ones
    assert alice.get(f"/api/games/{mine['id']}").status_code == 200
    one_line_error(mallory.get(f"/api/games/{theirs[0]['id']}"), 404, "this game was dropped: its client started 2 "
                   "newer games, this server's cap per client (max_games_per_client); start a new one")
    new(carol)
    new(carol)  # the server is full: the client with the most games gives one up
    assert alice.get(f"/api/games/{mine['id']}").status_code == 200 and len(app.state.table) == 4
    one_line_error(mallory.get(f"/api/games/{theirs[-2]['id']}"), 404, "the server was full (4 games, max_games) "
                   "and its client had the most")


def test_the_page_and_its_files_need_nothing_from_outside(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    texts = [page.text]
    for name, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and r.headers["content-type"].startswith(kind)
        texts.append(r.text)
    assert not any(re.search(r"https?://", t) for t in texts)  # no CDN, no outside font: works offline
    assert client.get("/static/nothing.js").status_code == 404


def test_the_server_logs_every_request_with_its_time(client, caplog):
    with caplog.at_level("INFO", logger="ttt.serve"):
        g = new(client)
        post(client, g, "move", {"move": 4})
        post(client, g, "step")
    line = rf"POST /api/games/{g['id']}/step 200 \d+\.\d ms \(\d+\.\d ms CPU in its worker\)"
    assert re.search(line, caplog.text), caplog.text


def test_loopback_hosts():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("no-such-host.invalid")


def run_serve(*args, timeout=30):
    return subprocess.run([sys.executable, "-m", "ttt.serve", *args], capture_output=True, text=True, timeout=timeout)


def compose_serve(*overrides: str):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[1] / "configs"), version_base="1.3"):
        return compose("serve", overrides=list(overrides))


@pytest.mark.parametrize("override, text", [("port=70000", "port must be in 0..65535"),
                                            ("checkpoints=/no/such/folder", "checkpoints=/no/such/folder: no such"),
                                            ("max_games=0", "max_games, max_games_per_client and threads must"),
                                            ("max_games_per_client=0", "max_games, max_games_per_client and"),
                                            ("max_seconds=0", "max_seconds must be a number above 0, got 0"),
                                            ("max_searches=1000", "max_searches must be at most 256")])
def test_bad_settings_are_refused_before_serving(override, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        serve(compose_serve(override))


@pytest.mark.cli
def test_the_command_answers_help_and_refuses_a_bad_port_in_one_line():
    p = run_serve("--help")
    assert p.returncode == 0 and "host=127.0.0.1" in p.stdout and "checkpoints=DIR" in p.stdout
    assert all(f"{key}=" in p.stdout for key in ("max_simulations", "max_depth", "max_seconds", "max_searches"))
    p = run_serve("port=70000")
    assert p.returncode == 2 and p.stderr == "error: port must be in 0..65535, got 70000\n", p.stderr


@pytest.mark.cli
def test_the_command_serves_the_page_and_logs_request_times():
    import httpx2 as httpx

    proc = subprocess.Popen([sys.executable, "-m", "ttt.serve", "port=0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"serving (http://\S+/)", line).group(1)
        assert url.startswith("http://127.0.0.1:")  # the default host
        deadline = time.monotonic() + 20
        while True:
            try:
                r = httpx.get(url)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert r.status_code == 200 and "<title>ttt" in r.text
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert re.search(r"GET / 200 \d+\.\d ms", err) and "warning" not in err, err


def test_the_latency_script_checks_its_settings(capsys, experiment_script):
    script = experiment_script("serve_latency")
    assert script.settings(["games=3", "agent=random"])["games"] == "3"
    assert script.main(["bogus=1"]) == 2 and "give key=value" in capsys.readouterr().err
    assert script.main(["games=0"]) == 2 and "games=0: a positive whole number" in capsys.readouterr().err


@pytest.mark.slow
def test_the_latency_script_reads_the_servers_log(capsys, experiment_script):
    assert experiment_script("serve_latency").main(["games=2", "agent=benchmark", "board=3x3", "port=0", "cores="]) == 0
    out = capsys.readouterr().out
    assert re.search(r"/step wall: \d+ requests, median \d+\.\d ms", out) and "/hint CPU" in out, out


def test_a_run_folder_with_checkpoints_of_two_runs_is_left_off_the_shelf(tmp_path, caplog):
    from ttt.web.games import CheckpointShelf

    for name in ("one", "both"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "checkpoint.pt").write_bytes(Path(SHIPPED_CHECKPOINT).read_bytes())
    (tmp_path / "both" / "checkpoint.npz").write_bytes(b"a tabular run's table")
    with caplog.at_level("WARNING", logger="ttt.serve"):
        assert CheckpointShelf(tmp_path).paths() == {"one": tmp_path / "one" / "checkpoint.pt"}
    assert "holds both checkpoint.pt and checkpoint.npz" in caplog.text and "left out" in caplog.text
