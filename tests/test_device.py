"""The device code path: torch tensors on the CPU here (so CI runs it) and on a GPU where CUDA is present
(those cases are skipped elsewhere). The device engine plays exactly the games of the numpy engine, the
threat queries and players agree, and a training run on the device computes the numpy run's TD targets.
``device=cuda`` without a GPU fails at start with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from ttt.agents import agent_module
from ttt.agents.dqn import Config, DQNPlayer, Rules, Trainer
from ttt.agents.dqn.labels import rank_orders
from ttt.agents.dqn.settings import upgrade_agent
from ttt.checkpoint import load_checkpoint, save_checkpoint
from ttt.device import TORCH_CPU, DeviceError, array_device, resolve_device
from ttt.evaluation.evaluate import play_match
from ttt.games import BOARDS, BatchedGames, Game, IllegalMoveError, make_game, random_legal_actions
from ttt.games.arrays import arrays_for
from ttt.games.exact import rule_values
from ttt.games.threats import MoveTactics, completing_moves, forced_wins, move_tactics, playable, threat_depths
from ttt.harness.training import Run
from ttt.perf import recipe_throughput, training_throughput
from ttt.players import BenchmarkPlayer, RandomPlayer

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
ARRAY_DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]  # torch tensors there
TRAIN_DEVICES = [TORCH_CPU, pytest.param("cuda", marks=CUDA)]
NETWORK = OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": False})
STATE = ("board", "to_play", "done", "winner", "num_moves", "last_action")
ROOT = Path(__file__).resolve().parents[1]


def as_numpy(x) -> np.ndarray:
    return x.cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


# ------------------------------------------------------------------ the engine
@pytest.mark.parametrize("device", ARRAY_DEVICES)
@pytest.mark.parametrize("board", [*BOARDS, "5x5x5"])
def test_device_engine_plays_the_games_of_the_numpy_engine(board, device):
    # 5x5x5 has 125 cells: both engines then sum the lines through the move (no 64-bit masks)
    g = Game("5x5x5", n=5, d=3) if board == "5x5x5" else make_game(board)
    host, dev = BatchedGames(g, 300), BatchedGames(g, 300, device)
    rng = np.random.default_rng(11)
    plies = 0
    while not host.done.all():
        legal = host.legal_mask()
        np.testing.assert_array_equal(as_numpy(dev.legal_mask()), legal)
        a = random_legal_actions(legal, rng)
        ended = host.play(a)
        check = bool(plies % 2)  # with the legality check, and without it
        np.testing.assert_array_equal(as_numpy(dev.play(torch.from_numpy(a).to(device), check=check)), ended)
        for name in STATE:
            np.testing.assert_array_equal(as_numpy(getattr(dev, name)), getattr(host, name), err_msg=name)
        plies += 1
    assert {-1, 1} <= set(host.winner.tolist())
    np.testing.assert_array_equal(as_numpy(dev.observation()), host.observation())
    assert [dev.state(i) for i in range(5)] == [host.state(i) for i in range(5)]
    mask = np.arange(300) % 3 == 0
    host.reset(mask)
    dev.reset(torch.from_numpy(mask).to(device))
    for name in STATE:
        np.testing.assert_array_equal(as_numpy(getattr(dev, name)), getattr(host, name), err_msg=name)


@pytest.mark.parametrize("device", ARRAY_DEVICES)
def test_illegal_action_on_device_raises_and_changes_nothing(device):
    g = make_game("4x4x4_gravity")
    games = BatchedGames(g, 3, device)
    games.play(torch.tensor([0, 1, 2], device=device))
    before = [as_numpy(getattr(games, name)).copy() for name in STATE]
    for bad in ([4, 1, 5], [4, 5, 64], [4, 5, -3], [4, 5, 40]):
        with pytest.raises(IllegalMoveError, match=r"action -?\d+ on 4x4x4_gravity"):
            games.play(torch.tensor(bad, device=device))
        assert all((as_numpy(getattr(games, n)) == b).all() for n, b in zip(STATE, before, strict=True))
    for wrong in (torch.tensor([4.0, 5.0, 6.0]), torch.tensor([True, False, True]), torch.tensor([4, 5])):
        with pytest.raises(IllegalMoveError):
            games.play(wrong.to(device))


@pytest.mark.parametrize("device", ARRAY_DEVICES)
def test_random_legal_actions_on_device_are_uniform_and_legal(device):
    gen = arrays_for(device).generator(4)
    legal = torch.zeros((60000, 64), dtype=torch.bool, device=device)
    legal[:, [5, 33, 60]] = True
    legal[-1] = False
    a = as_numpy(random_legal_actions(legal, gen))
    assert a[-1] == -1
    counts = np.bincount(a[:-1], minlength=64)
    assert counts[[5, 33, 60]].sum() == 59999
    assert all(abs(counts[c] - 20000) < 5 * np.sqrt(20000 * 2 / 3) for c in (5, 33, 60))


# ------------------------------------------------------------------ threats and players
def random_positions(board: str, num_games: int = 60, seed: int = 2) -> BatchedGames:
    """Every unfinished position of ``num_games`` random games, as one numpy batch."""
    g = make_game(board)
    games, rng = BatchedGames(g, num_games), np.random.default_rng(seed)
    seen: dict[str, list[np.ndarray]] = {"board": [], "to_play": [], "num_moves": []}
    while not games.done.all():
        for name, arrays in seen.items():
            arrays.append(getattr(games, name)[~games.done].copy())
        games.play(random_legal_actions(games.legal_mask(), rng))
    out = BatchedGames(g, sum(len(x) for x in seen["board"]))
    for name, arrays in seen.items():
        getattr(out, name)[:] = np.concatenate(arrays)
    return out


def on_device(games: BatchedGames, device) -> BatchedGames:
    """A copy of numpy ``games`` on ``device``."""
    out = BatchedGames(games.game, len(games), device)
    for name in STATE:
        getattr(out, name)[:] = torch.from_numpy(getattr(games, name)).to(device)
    return out


@pytest.mark.parametrize("device", ARRAY_DEVICES)
@pytest.mark.parametrize("board", BOARDS)
def test_threat_queries_on_device_match_numpy(board, device):
    host = random_positions(board)
    dev = on_device(host, device)
    legal, me = host.legal_mask(), host.to_play
    wins = completing_moves(host.board, me, legal, host.game)
    assert wins.any()
    np.testing.assert_array_equal(as_numpy(completing_moves(dev.board, dev.to_play, dev.legal_mask(), dev.game)), wins)
    expected = move_tactics(host.board, me, legal, host.game)
    got = move_tactics(dev.board, dev.to_play, dev.legal_mask(), dev.game)
    for name in ("win", "loss", "fork"):
        np.testing.assert_array_equal(as_numpy(getattr(got, name)), getattr(expected, name), err_msg=name)


def afterstates_of(games: BatchedGames, limit: int = 1500) -> tuple[np.ndarray, np.ndarray]:
    """The boards after every legal move of the first positions of ``games`` (up to ``limit`` moves),
    with the opponent to move: positions with many lines two short, where forks and threats are made."""
    e, cell = np.nonzero(games.legal_mask())
    e, cell = e[:limit], cell[:limit]
    after = games.board[e]
    after[np.arange(len(e)), cell] = games.to_play[e]
    return after, -games.to_play[e]


@pytest.mark.parametrize("device", ARRAY_DEVICES)
@pytest.mark.parametrize("board", BOARDS)
def test_rule_values_on_device_match_numpy(board, device):
    # the tactics, forced wins, threat chains and rule values of one code path on both kinds of array,
    # on positions of random play and on every afterstate of some of them (where forks are made)
    game = make_game(board)
    host = random_positions(board, num_games=30, seed=4)
    after, mover = afterstates_of(host)
    boards = np.concatenate([host.board, after])
    player = np.concatenate([host.to_play, mover])
    legal = playable(boards, game)
    dev = [torch.from_numpy(x).to(device) for x in (boards, player, legal)]
    expected = move_tactics(boards, player, legal, game)
    got = move_tactics(*dev, game)
    for name in ("win", "loss", "fork"):
        assert getattr(expected, name).any(), name  # the positions hold every kind of move
        np.testing.assert_array_equal(as_numpy(getattr(got, name)), getattr(expected, name), err_msg=name)
    # the searches below build afterstates of afterstates: 300 of the positions, drawn from all of them
    few = np.sort(np.random.default_rng(0).choice(len(boards), 300, replace=False))
    dev_few = [x[torch.from_numpy(few)] for x in dev]
    np.testing.assert_array_equal(as_numpy(forced_wins(*dev_few, game)),
                                  forced_wins(boards[few], player[few], legal[few], game))
    depths = threat_depths(boards[few], player[few], legal[few], game, depth=3)
    if game.d == 3:  # chains are common in three dimensions (on 3x3 every forcing threat forks at once)
        assert depths.any()
    np.testing.assert_array_equal(as_numpy(threat_depths(*dev_few, game, depth=3)), depths)
    views = boards[few] * player[few, None]
    t = MoveTactics(expected.win[few], expected.loss[few], expected.fork[few])
    d = MoveTactics(*(getattr(got, name)[torch.from_numpy(few)] for name in ("win", "loss", "fork")))
    # fork defence on every cell: no random subset, which each kind of generator draws differently
    value, known = rule_values(views, t, 0.9, game, defence=game.num_cells, threats=2)
    d_value, d_known = rule_values(torch.from_numpy(views).to(device), d, 0.9, game, defence=game.num_cells,
                                   threats=2)
    assert (value == -0.9).any() and (value == 0.9).any()  # lost to a fork, and forks
    np.testing.assert_array_equal(as_numpy(d_known), known)
    np.testing.assert_array_equal(as_numpy(d_value), value)
    for (hi, lo), (d_hi, d_lo) in zip(rank_orders(legal, expected, forced=True), rank_orders(dev[2], got, forced=True),
                                      strict=True):
        np.testing.assert_array_equal(as_numpy(d_hi), hi)
        np.testing.assert_array_equal(as_numpy(d_lo), lo)


@pytest.mark.parametrize("device", ARRAY_DEVICES)
@pytest.mark.parametrize("board", ["3x3", "4x4x4_gravity"])
def test_benchmark_player_on_device_wins_else_blocks_else_plays_safe(board, device):
    host = random_positions(board, num_games=100)
    dev = on_device(host, device)
    a = as_numpy(BenchmarkPlayer(host.game).act_batch(dev, arrays_for(device).generator(0)))
    legal, me, g = host.legal_mask(), host.to_play, host.game
    rows = np.arange(len(host))
    assert legal[rows, a].all()
    win = completing_moves(host.board, me, legal, g)
    block = completing_moves(host.board, -me, legal, g)
    has_win, has_block = win.any(1), ~win.any(1) & block.any(1)
    assert has_win.any() and has_block.any()
    assert win[rows, a][has_win].all() and block[rows, a][has_block].all()
    if g.gravity:  # otherwise never under a cell that completes the opponent's line, when it can avoid it
        threat = completing_moves(host.board, -me, host.board == 0, g)
        above = np.full(g.num_cells, -1)
        above[g.below[g.below >= 0]] = np.flatnonzero(g.below >= 0)
        unsafe = np.zeros_like(legal)
        unsafe[:, above >= 0] = threat[:, above[above >= 0]]
        free = ~has_win & ~has_block & (legal & ~unsafe).any(1)
        assert free.any() and not unsafe[rows, a][free].any()


@pytest.mark.parametrize("device", ARRAY_DEVICES)
def test_match_on_device_reproduces_the_benchmark_baseline(device):
    # FACTS.md: the benchmark player as first player wins 89.9% against random on 3x3
    g = make_game("3x3")
    r = play_match(g, BenchmarkPlayer(g), RandomPlayer(g), 4000, seed=1, seats="first", device=device)
    assert abs(r.first.win_rate - 0.899) < 4 * np.sqrt(0.9 * 0.1 / 4000)
    assert r.first.games == 4000


# ------------------------------------------------------------------ training on the device
def scripted_plies(device: str, board: str, plies: int, num_envs: int = 4, **agent):
    """Train on scripted moves (random legal moves drawn on the host); the TD batches of each ply."""
    game = make_game(board)
    torch.manual_seed(0)
    xp = arrays_for(array_device(device))
    trainer = Trainer(game, NETWORK, Config(**upgrade_agent(dict(optimizer="sgd", lr=0.05, **agent))), num_envs,
                      xp.generator(0), device=device)
    rng = np.random.default_rng(5)
    out = []
    for _ in range(plies):
        legal = as_numpy(trainer.games.legal_mask())
        batch = trainer.step(xp.asarray(random_legal_actions(legal, rng)))
        out.append((as_numpy(batch.rows), as_numpy(batch.obs), as_numpy(batch.targets)))
    return out, trainer


@pytest.mark.parametrize("device", TRAIN_DEVICES)
@pytest.mark.parametrize("board", ["3x3", "4x4x4"])
def test_training_on_device_computes_the_td_targets_of_the_cpu_run(board, device):
    plies = 40 if board == "3x3" else 80
    expected, host = scripted_plies("cpu", board, plies, opponent="self_play", opponent_after="self_play")
    got, dev = scripted_plies(device, board, plies, opponent="self_play", opponent_after="self_play")
    assert host.episodes == dev.episodes > 4
    assert sum(len(t) for _, _, t in expected) > plies
    for (rows, obs, targets), (d_rows, d_obs, d_targets) in zip(expected, got, strict=True):
        np.testing.assert_array_equal(d_rows, rows)
        np.testing.assert_array_equal(d_obs, obs)
        np.testing.assert_allclose(d_targets, targets, atol=1e-5)
    for name, p in host.net.state_dict().items():
        torch.testing.assert_close(dev.net.state_dict()[name].cpu(), p, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("td", [{}, {"td_lambda": 0.7}])
def test_targets_on_torch_tensors_equal_the_numpy_ones_exactly(td):
    # on the CPU the device code path runs the same torch operations: not close, equal
    # every rule and rule label (fork defence on all 64 cells: no random subset, which each generator draws);
    # td_lambda: the λ-returns of the games that end
    rules = dict(exact_losses=True, rule_labels=True, fork_defence_labels=64,
                 opponent="self_play", opponent_after="self_play", **td)
    expected, host = scripted_plies("cpu", "4x4x4_gravity", 60, **rules)
    got, _ = scripted_plies(TORCH_CPU, "4x4x4_gravity", 60, **rules)
    assert host.episodes >= 2  # games ended: their targets are in
    for e, d in zip(expected, got, strict=True):
        for x, y in zip(e, d, strict=True):
            np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("rank", [{}, {"rank_moves": 4},
                                  {"rank_moves": 4, "rank_forced": True, "rank_moves_wins": False, "rank_weight": 0.5},
                                  {"rank_moves": 4, "rank_forced": True, "rank_head": True}])
@pytest.mark.parametrize("device", TRAIN_DEVICES)
def test_trainer_on_device_runs_the_curriculum_and_resumes_exactly(device, rank, tmp_path):
    agent = Config(**upgrade_agent(dict(switch_episode=12, opponent_after="frozen", refresh_every=10, frozen_pool=2,
                                        benchmark_fraction=0.5, exact_losses=True, symmetry_augment=True,
                                        rule_labels=True, random_labels=8, rank_labels=6, first_lr=0.01, **rank)))
    game = make_game("3x3")
    xp = arrays_for(array_device(device))

    def trainer() -> Trainer:
        torch.manual_seed(0)
        return Trainer(game, NETWORK, agent, 8, xp.generator(3), device=device)

    t = trainer()
    while t.episodes < 40:
        t.step()
    assert len(t.pool) == 2 and set(as_numpy(t.opponent).tolist()) == {1, 2}  # frozen and benchmark games
    assert all(p.device.type == torch.device(array_device(device)).type for p in t.net.parameters())
    t.take_loss()  # the loss sum since the last log is not part of the state
    save_checkpoint(tmp_path / "trainer.pt", {"kind": "dqn", "game": "3x3", "trainer": t.state_dict()})
    resumed = trainer()
    resumed.load_state_dict(load_checkpoint(tmp_path / "trainer.pt")["trainer"])
    # on a GPU, sums of atomic adds may differ in the last bit between two runs: close, over fewer plies
    exact = device == TORCH_CPU
    tol = {"atol": 0.0, "rtol": 0.0} if exact else {"atol": 1e-5, "rtol": 1e-5}
    for _ in range(30 if exact else 10):
        a, b = t.step(), resumed.step()
        np.testing.assert_allclose(as_numpy(b.targets), as_numpy(a.targets), **tol)
    assert t.take_loss() == pytest.approx(resumed.take_loss(), abs=tol["atol"])
    for name, p in t.net.state_dict().items():
        torch.testing.assert_close(resumed.net.state_dict()[name], p, **tol)


def test_a_host_checkpoint_does_not_resume_on_a_device():
    game = make_game("3x3")
    saved = Trainer(game, NETWORK, Config(), 2, np.random.default_rng(0)).state_dict()
    on_torch = Trainer(game, NETWORK, Config(), 2, arrays_for("cpu").generator(0), device=TORCH_CPU)
    with pytest.raises(Exception, match="trained with device=cpu; resume it with device=cpu"):
        on_torch.load_state_dict(saved)


@pytest.mark.parametrize("device", TRAIN_DEVICES)
def test_dqn_training_run_on_device_learns_and_evaluates_there(compose_train, device):
    cfg = compose_train(["+experiment=dqn_33", "episodes=1500", "num_envs=32", "eval_every=0",
                         "eval_games=200", "agent.final_eval_games=400", "agent.switch_episode=100000"])
    torch.manual_seed(0)
    with Run(cfg, cfg.run_dir, device) as run:
        final = agent_module("dqn").train(cfg, run)
    scores = {r["opponent"]: r["score"] for r in final["results"] if r["seat"] == "both"}
    assert scores["random"] > 0.75  # random vs random scores 0.5; seeds 0-3 on torch tensors: 0.83 to 0.89
    assert Path(cfg.run_dir, "checkpoint.pt").is_file()


@pytest.mark.parametrize("device", TRAIN_DEVICES)
def test_alphazero_trains_its_network_on_the_device(compose_train, device):
    cfg = compose_train(["+experiment=alphazero_33", "episodes=8", "eval_every=0", "eval_games=4", "num_envs=4",
                         "eval_opponents=[random]", "agent.simulations=4", "agent.eval_simulations=4",
                         "agent.batch_size=16"])
    with Run(cfg, cfg.run_dir, device) as run:
        final = agent_module("alphazero").train(cfg, run)
    assert final["episodes"] == 8 and final["updates"] > 0
    assert load_checkpoint(Path(cfg.run_dir, "checkpoint.pt"))["model"]  # saved from the device, read on the CPU


def test_profile_of_the_device_code_path_names_torch_operators(capsys):
    from ttt import perf

    perf.print_profile("engine", TORCH_CPU, lambda: perf.engine_plies_per_sec("3x3", 64, 0.05, device="cpu"))
    out = capsys.readouterr().out
    assert "torch.profiler" in out and "aten::" in out


def test_greedy_player_on_device_plays_the_moves_of_the_host_player():
    game = make_game("4x4x4")
    torch.manual_seed(0)
    net = Trainer(game, NETWORK, Config(), 1, np.random.default_rng(0)).net
    player = DQNPlayer(game, net, rules=Rules(losses=True, forks=True))  # every rule, forks included
    host = random_positions("4x4x4", num_games=20)
    np.testing.assert_array_equal(as_numpy(player.act_batch(on_device(host, "cpu"))), player.act_batch(host))


def test_training_throughput_on_torch_tensors():
    assert training_throughput(num_envs=8, seconds=0.3, board="3x3", device=TORCH_CPU) > 0


@pytest.mark.parametrize("device", TRAIN_DEVICES)
def test_recipe_throughput_on_the_device_code_path(device):
    # dqn_444 with every option it sets (curriculum, exact losses, rule labels with fork defence, random-play
    # labels, rank pairs) on the device code path
    assert recipe_throughput(num_envs=4, seconds=0.3, device=device) > 0


# ------------------------------------------------------------------ the device key
def test_auto_is_cuda_exactly_when_cuda_is_available():
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(DeviceError, match="device=tpu: choose one of auto, cpu, cuda"):
        resolve_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.cli
def test_train_with_cuda_but_no_gpu_fails_at_start_with_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ttt.train", "+experiment=dqn_33", "device=cuda",
                           f"run_dir={tmp_path / 'run'}"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("error: device=cuda: no CUDA device is available")
    assert not (tmp_path / "run").exists()  # the folder the run created is removed


def test_progress_line_names_the_device(compose_train, capsys):
    cfg = compose_train(["game=3x3", "progress=true"])
    with Run(cfg, cfg.run_dir, TORCH_CPU) as run:
        run.progress(10, "fast", force=True)
    assert f"10/{cfg.episodes} {TORCH_CPU} fast" in capsys.readouterr().err
