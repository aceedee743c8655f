"""TD(0) afterstate learning: hand-computed targets on scripted games, and one test per mistake of the
earlier public implementation (reward sign, losses, terminal target, detached target, cell indexing,
the opponent network's own best move), batched = sequential, determinism, save/load, learning."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from ttt.agents import load_player
from ttt.agents.dqn import (
    NO_RULES,
    Config,
    DQNPlayer,
    Rules,
    Trainer,
    epsilon_at,
    example_weights,
    final_targets,
    lambda_targets,
    make_optimizer,
    rank_loss,
    rank_orders,
    rank_pairs,
    rule_targets,
    selection_values,
    td0_targets,
    training_rules,
)
from ttt.agents.dqn.labels import random_position_labels
from ttt.agents.dqn.parts.labels import LabelSettings
from ttt.agents.dqn.settings import upgrade_agent
from ttt.evaluation.evaluate import play_match
from ttt.games import BatchedGames, make_game
from ttt.games.threats import move_tactics
from ttt.nets.structured import build_value_net
from ttt.players import RandomPlayer

GAMMA = 0.9
NETWORK = OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": False})


# Scripted 3x3 games (cells row*3+col) and the learning seat in each.
X_WINS = ([4, 0, 2, 1, 6], 1)  # X: 4, 2, 6 completes the 2-4-6 diagonal
X_BEATS_O = ([0, 4, 1, 8, 2], -1)  # the learner is O; X completes the top row
DRAW = ([0, 4, 8, 1, 7, 6, 2, 5, 3], -1)  # the learner is O; X fills the board, nobody wins


def make_trainer(num_envs: int = 1, lr: float = 0.0, seats=None, **agent) -> Trainer:
    torch.manual_seed(0)
    cfg = Config(**upgrade_agent(dict(optimizer="sgd", lr=lr, gamma=GAMMA, **agent)))
    trainer = Trainer(make_game("3x3"), NETWORK, cfg, num_envs, np.random.default_rng(0))
    if seats is not None:
        trainer.agent_seat[:] = seats
    return trainer


def position_labels(trainer: Trainer):
    """The labels and rank pairs of the trainer's random-play games (which then move on one ply)."""
    return random_position_labels(trainer.part("labels").games[0], trainer.settings.parts["labels"], trainer.net,
                                  trainer.rng, trainer.settings.gamma, trainer.rules)


def continue_identically(trainer: Trainer, other: Trainer, plies: int) -> None:
    """Both trainers play ``plies`` more plies and end with equal weights, bit for bit."""
    for _ in range(plies):
        trainer.step()
        other.step()
    for k, v in trainer.net.state_dict().items():
        assert torch.equal(v, other.net.state_dict()[k])


def view(cells_own, cells_opp) -> np.ndarray:
    board = np.zeros(9, dtype=np.float32)
    board[list(cells_own)] = 1
    board[list(cells_opp)] = -1
    return board


def value(trainer: Trainer, board: np.ndarray) -> float:
    with torch.no_grad():
        return float(trainer.net(torch.from_numpy(board)[None])[0])


def play_script(trainer: Trainer, moves: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Play a scripted game in env 0; the (afterstates, targets) of each ply's update."""
    out = []
    for a in moves:
        batch = trainer.step(np.array([a]))
        out.append((batch.obs.copy(), batch.targets.copy()))
    return out


def test_hand_computed_targets_when_the_learner_wins():
    trainer = make_trainer(seats=[1])
    plies = play_script(trainer, X_WINS[0])
    assert [len(t) for _, t in plies] == [0, 0, 1, 0, 2]
    # ply 3: V(after X4) -> gamma * V(after X4, X2 with O on 0)
    obs, targets = plies[2]
    np.testing.assert_array_equal(obs[0], view([4], []))
    assert targets[0] == pytest.approx(GAMMA * value(trainer, view([4, 2], [0])), abs=1e-6)
    # ply 5, the winning move: the previous afterstate -> gamma * (+1), the terminal one -> +1 exactly
    obs, targets = plies[4]
    np.testing.assert_array_equal(obs[0], view([4, 2], [0]))
    np.testing.assert_array_equal(obs[1], view([4, 2, 6], [0, 1]))
    np.testing.assert_allclose(targets, [GAMMA, 1.0])  # reward sign: a win is +1


def test_losses_are_learned_without_bootstrap():
    trainer = make_trainer(num_envs=1, seats=[-1])
    plies = play_script(trainer, X_BEATS_O[0])
    assert [len(t) for _, t in plies] == [0, 0, 0, 1, 1]
    obs, targets = plies[3]  # O's second move: V(after O4) -> gamma * V(after O4, O8)
    np.testing.assert_array_equal(obs[0], view([4], [0]))
    assert targets[0] == pytest.approx(GAMMA * value(trainer, view([4, 8], [0, 1])), abs=1e-6)
    obs, targets = plies[4]  # X wins on its own move: O's last afterstate -> -1, whatever the network says
    np.testing.assert_array_equal(obs[0], view([4, 8], [0, 1]))
    assert targets.tolist() == [-1.0]


def test_draw_by_the_opponent_targets_zero():
    trainer = make_trainer(seats=[-1])
    plies = play_script(trainer, DRAW[0])
    obs, targets = plies[-1]
    np.testing.assert_array_equal(obs[0], view([4, 1, 6, 5], [0, 8, 7, 2]))
    assert targets.tolist() == [0.0]


def test_terminal_targets_do_not_depend_on_the_network():
    # two different networks: bootstrapped targets differ, terminal targets are the reward
    finals = []
    for seed in (0, 1):
        trainer = make_trainer(seats=[1])
        torch.manual_seed(seed)
        trainer.net.first.reset_parameters()
        finals.append(play_script(trainer, X_WINS[0]))
    assert finals[0][2][1][0] != finals[1][2][1][0]
    np.testing.assert_array_equal(finals[0][4][1], finals[1][4][1])


def test_self_play_learns_from_both_seats():
    trainer = make_trainer(seats=[1], opponent="self_play", opponent_after="self_play")
    plies = play_script(trainer, X_BEATS_O[0])
    # X learns from its 2nd and 3rd moves, O from its 2nd; at the end O's last afterstate -> -1
    assert [len(t) for _, t in plies] == [0, 0, 1, 1, 3]
    np.testing.assert_allclose(plies[4][1], [GAMMA, 1.0, -1.0])
    np.testing.assert_array_equal(plies[4][0][2], view([4, 8], [0, 1]))


@pytest.mark.parametrize("opponent", ["random", "benchmark", "frozen"])
def test_against_another_player_the_learner_learns_from_its_own_afterstates_alone(opponent):
    plain = play_script(make_trainer(seats=[1], opponent=opponent, opponent_after=opponent), X_BEATS_O[0])
    assert [len(t) for _, t in plain] == [0, 0, 1, 0, 2]  # X alone learns: its 2nd move, its win (2 targets)
    np.testing.assert_array_equal(plain[4][0][1], view([0, 1, 2], [4, 8]))
    assert plain[4][1][1] == 1.0


def test_batched_games_compute_the_same_targets_as_sequential_ones():
    scripts = [X_WINS, X_BEATS_O, DRAW]
    sequential = []
    for moves, seat in scripts:
        trainer = make_trainer(seats=[seat])
        sequential.append(play_script(trainer, moves))
    trainer = make_trainer(num_envs=3, seats=[s for _, s in scripts])
    batched: list[list] = [[] for _ in scripts]
    for ply in range(max(len(m) for m, _ in scripts)):
        actions = np.array([m[ply] if ply < len(m) else int(np.flatnonzero(trainer.games.legal_mask()[e])[0])
                            for e, (m, _) in enumerate(scripts)])
        batch = trainer.step(actions)
        rows, obs, targets = batch.rows, batch.obs, batch.targets
        for e, (m, _) in enumerate(scripts):
            if ply < len(m):
                batched[e].append((obs[rows == e], targets[rows == e]))
    for seq, bat in zip(sequential, batched, strict=True):
        for (o1, t1), (o2, t2) in zip(seq, bat, strict=True):
            np.testing.assert_array_equal(o1, o2)
            np.testing.assert_allclose(t1, t2, atol=1e-6)


def test_target_is_detached():
    # one SGD step equals the gradient of huber(V(prev), constant target): no gradient through the target
    trainer = make_trainer(lr=0.5, seats=[1])
    play_script(trainer, X_WINS[0][:2])
    before = {k: v.clone() for k, v in trainer.net.state_dict().items()}
    reference = make_trainer(lr=0.0, seats=[1])
    reference.net.load_state_dict(before)
    batch = trainer.step(np.array([X_WINS[0][2]]))
    obs, targets = batch.obs, batch.targets
    pred = reference.net(torch.from_numpy(obs))
    torch.nn.functional.huber_loss(pred, torch.from_numpy(targets)).backward()
    for name, p in reference.net.named_parameters():
        torch.testing.assert_close(trainer.net.state_dict()[name], before[name] - 0.5 * p.grad)


def test_learned_afterstate_is_the_played_cell():
    # the afterstate trained on is the rules engine's board after the move, from the mover's view
    game = make_game("4x4x4")
    trainer = Trainer(game, NETWORK, Config(), 1, np.random.default_rng(0))
    state = game.initial_state()
    for a in [21, 0, 63, 5]:  # 21 = layer 1, row 1, col 1
        trainer.step(np.array([a]))
        mover = state.to_play()
        state = state.apply(a)
        if mover == trainer.agent_seat[0]:
            np.testing.assert_array_equal(trainer.prev[0, 0], -state.observation())
    assert trainer.prev[0, 0][21] == 1 and trainer.prev[0, 0][63] == 1 and trainer.prev[0, 0][0] == -1


def test_greedy_values_score_the_afterstate_of_each_move():
    game = make_game("4x4x4")
    net = Trainer(game, NETWORK, Config(), 1, np.random.default_rng(0)).net
    state = game.initial_state().apply(5).apply(40).apply(17)
    values = selection_values(net, BatchedGames.from_states([state]), np.array([0]))[0]
    for a in state.legal_actions():
        with torch.no_grad():
            direct = float(net(torch.from_numpy(-state.apply(a).observation())[None])[0])
        assert float(values[a]) == pytest.approx(direct, abs=1e-5)
    assert torch.isinf(values[[5, 40, 17]]).all()


def test_frozen_opponent_plays_its_own_best_move():
    game = make_game("4x4x4")
    trainer = Trainer(game, NETWORK, Config(opponent="frozen"), 1, np.random.default_rng(0))
    trainer.agent_seat[:] = 1
    trainer.step(np.array([0]))  # the learner (X) moves; now the frozen copy plays O
    state = trainer.games.state(0)
    trainer.step()
    played = int(trainer.games.last_action[0])
    # its own view: O's afterstates with O's pieces as +1, and the argmax, not the argmin
    scores = {a: float(trainer.frozen(torch.from_numpy(-state.apply(a).observation())[None])[0])
              for a in state.legal_actions()}
    assert played == max(scores, key=scores.get)
    assert played != min(scores, key=scores.get)


def test_curriculum_switches_to_a_frozen_copy_and_refreshes_it():
    trainer = make_trainer(num_envs=4, lr=0.01, switch_episode=20, refresh_every=30)
    assert trainer.phase() == "random" and trainer.frozen is None
    while trainer.episodes < 20:
        trainer.step()
    assert trainer.phase() == "frozen" and trainer.frozen_refreshes == 1
    taken = {k: v.clone() for k, v in trainer.frozen.state_dict().items()}
    while trainer.episodes < 60:
        trainer.step()
    assert trainer.frozen_refreshes == 2
    assert any(not torch.equal(taken[k], v) for k, v in trainer.frozen.state_dict().items())
    assert not any(p.requires_grad for p in trainer.frozen.parameters())


def test_two_runs_with_one_seed_give_identical_weights():
    weights = []
    for _ in range(2):
        trainer = make_trainer(num_envs=4, lr=0.01, switch_episode=30)
        while trainer.episodes < 60:
            trainer.step()
        weights.append(trainer.net.state_dict())
    for k in weights[0]:
        assert torch.equal(weights[0][k], weights[1][k])


TIED = OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": True, "tie_orbits": True})


@pytest.mark.parametrize("network", [NETWORK, TIED], ids=["untied", "tied"])
def test_save_load_round_trip_gives_the_same_greedy_moves(tmp_path, network):
    torch.manual_seed(0)
    game = make_game("3x3")
    trainer = Trainer(game, network, Config(optimizer="sgd", lr=0.01, gamma=GAMMA), 4, np.random.default_rng(0))
    while trainer.episodes < 50:
        trainer.step()
    player = DQNPlayer(game, trainer.net, OmegaConf.to_container(network))
    player.save(tmp_path / "dqn.pt")
    loaded = load_player(tmp_path / "dqn.pt")
    rng = np.random.default_rng(3)
    games = BatchedGames(game, 64)
    for _ in range(4):  # random positions a few plies deep
        games.play(RandomPlayer(game).act_batch(games, rng))
        np.testing.assert_array_equal(player.act_batch(games, rng), loaded.act_batch(games, rng))
    state = game.initial_state().apply(4)
    assert loaded.action_values(state) == pytest.approx(player.action_values(state))
    assert loaded.act(state, rng) == player.act(state, rng)


def test_the_discount_travels_with_the_checkpoint_and_old_rules_that_stored_it_still_load(tmp_path):
    from ttt.agents.dqn.player import checkpoint_rules
    from ttt.checkpoint import load_checkpoint

    game = make_game("3x3")
    net = build_value_net(NETWORK, game)
    rules = Rules(losses=True, forks=True, threats=1)
    DQNPlayer(game, net, OmegaConf.to_container(NETWORK), rules, gamma=0.97).save(tmp_path / "dqn.pt")
    payload = load_checkpoint(tmp_path / "dqn.pt")
    assert payload["rules"] == {"wins": True, "losses": True, "forks": True, "threats": 1}
    loaded = load_player(tmp_path / "dqn.pt")
    assert (loaded.rules, loaded.gamma) == (rules, 0.97)
    # written while the rules carried the discount: the run's config says it, or else the rules' own key
    old = {**payload, "rules": {**payload["rules"], "gamma": 0.8}}
    assert checkpoint_rules(old) == (rules, 0.97)
    assert checkpoint_rules({k: v for k, v in old.items() if k != "config"}) == (rules, 0.8)
    assert checkpoint_rules({"exact_wins": False}) == (Rules(wins=False), GAMMA)


def test_learns_to_beat_random_on_3x3():
    torch.manual_seed(0)
    game = make_game("3x3")
    cfg = Config(switch_episode=10**9)  # random opponent throughout
    trainer = Trainer(game, NETWORK, cfg, 32, np.random.default_rng(0))
    player = DQNPlayer(game, trainer.net)
    before = play_match(game, player, RandomPlayer(game), 400, seed=1).both.score
    while trainer.episodes < 3000:
        trainer.step()
    after = play_match(game, player, RandomPlayer(game), 400, seed=1)
    # random vs random scores 0.5 over both seats; after 3,000 games it wins clearly from both seats
    assert after.both.score > 0.8 > before
    assert after.first.win_rate > 0.8 and after.second.score > 0.6


def test_a_winning_afterstate_scores_its_reward_exactly():
    game = make_game("4x4x4")
    net = Trainer(game, NETWORK, Config(), 1, np.random.default_rng(0)).net
    state = game.initial_state()
    for a in [0, 20, 1, 40, 2, 60]:
        state = state.apply(a)
    games = BatchedGames.from_states([state])
    exact = selection_values(net, games, np.array([0]))[0]
    estimate = selection_values(net, games, np.array([0]), NO_RULES)[0]
    assert float(exact[3]) == 1.0 and float(estimate[3]) < 1.0
    others = [a for a in state.legal_actions() if a != 3]
    assert torch.equal(exact[others], estimate[others])
    assert DQNPlayer(game, net).act(state, np.random.default_rng(0)) == 3


def test_learn_from_game_replays_both_seats_through_the_td_rule():
    game = make_game("3x3")
    torch.manual_seed(0)
    player = DQNPlayer(game, make_trainer().net)
    states = [game.initial_state()]
    for a in X_BEATS_O[0]:
        states.append(states[-1].apply(a))
    loser_view = torch.from_numpy(view([4, 8], [0, 1]))[None]
    with torch.no_grad():
        before = float(player.net(loser_view)[0])
    for _ in range(20):
        assert player.learn_from_game(states)
    with torch.no_grad():
        after = float(player.net(loser_view)[0])
    assert after < before - 0.1  # O's last afterstate before X's win moves toward -1


def test_symmetry_augmentation_trains_on_symmetric_images_of_the_afterstates():
    trainer = make_trainer(lr=0.1, seats=[1], symmetry_augment=True)
    seen = []
    trainer.net.register_forward_pre_hook(lambda module, args: seen.append(args[0].numpy().copy()))
    obs = play_script(trainer, X_WINS[0])[-1][0]  # the rows of the last ply, before augmentation
    images = {tuple(o[p]) for o in obs for p in make_game("3x3").symmetries}
    assert len(seen[-1]) == len(obs) and all(tuple(row) in images for row in seen[-1])
    assert any(not np.array_equal(row, o) for row, o in zip(seen[-1], obs, strict=True))  # not the identity


# ------------------------------------------------------------------ the pure TD(0) target functions
def test_td0_targets_by_hand():
    # three movers: one mid-game, one whose move wins, one at its first move (nothing to bootstrap)
    prev = np.array([view([4], [0]), view([4, 2], [0]), view([], [])])
    after = np.array([view([4, 8], [0]), view([4, 2, 6], [0, 1]), view([4], [])])
    t = td0_targets(np.array([5, 6, 7]), prev, np.array([True, True, False]), after,
                    new_value=np.array([0.25, 0.7, 0.1], np.float32), terminal=np.array([False, True, False]),
                    reward=np.array([0.0, 1.0, 0.0], np.float32), gamma=GAMMA)
    np.testing.assert_allclose(t.targets, [GAMMA * 0.25, GAMMA * 1.0, 1.0])  # the win bootstraps from r, not V
    np.testing.assert_array_equal(t.rows, [5, 6, 6])
    np.testing.assert_array_equal(t.obs, [prev[0], prev[1], after[1]])


def test_final_targets_are_the_waiting_seats_reward():
    prev = np.array([view([4, 8], [0, 1]), view([0], [4])])
    t = final_targets(np.array([2, 3]), prev, np.array([True, True]), reward=np.array([1.0, 0.0], np.float32))
    np.testing.assert_allclose(t.targets, [-1.0, 0.0])  # the mover won: the waiting seat lost; a draw is 0
    np.testing.assert_array_equal(t.rows, [2, 3])


def test_rule_targets_label_every_block_situation_afterstate():
    game = make_game("3x3")
    board = np.array([[1, 0, 0, 0, 1, 0, 0, -1, -1]], dtype=np.int8)  # X: 0, 4; O: 7, 8; X to move
    x = np.array([1], np.int8)
    t = rule_targets(np.array([9]), board.astype(np.float32), move_tactics(board, x, board == 0, game), GAMMA, game)
    labels = {int(np.flatnonzero(o != board[0])[0]): float(v) for o, v in zip(t.obs, t.targets, strict=True)}
    # 6 blocks O's 6-7-8 and makes two winning cells (2 and 3): worth gamma; every other move loses
    assert labels == {6: pytest.approx(GAMMA), 1: -1.0, 2: -1.0, 3: -1.0, 5: -1.0}
    assert (t.rows == 9).all()


def test_rule_labels_join_the_ply_update():
    trainer = make_trainer(seats=[1], rule_labels=True)
    play_script(trainer, [0, 7, 4, 8])  # X (0, 4) to move faces O's threat on 6
    batch = trainer.step(np.array([6]))
    # the TD(0) target of X's previous afterstate, then the rules' labels of X's five legal moves
    np.testing.assert_array_equal(batch.obs[0], view([0, 4], [7]))
    labels = {int(np.flatnonzero(o != view([0, 4], [7, 8]))[0]): float(v)
              for o, v in zip(batch.obs[1:], batch.targets[1:], strict=True)}
    assert labels == {6: pytest.approx(GAMMA), 1: -1.0, 2: -1.0, 3: -1.0, 5: -1.0}


def test_example_weights_by_hand():
    runs = torch.tensor([0, 0, 1, 0, 1, 1])  # examples 0-2 the ply's TD targets, 3-5 labels
    # without label_weight each run's examples are one mean: 3 examples each
    assert example_weights(runs, 3, 2, 0.0).tolist() == pytest.approx([1 / 3] * 6)
    # with it, run 0: 2 TD targets (1/2 each) and 1 label (0.5 / 1); run 1: 1 TD target, 2 labels (0.5 / 2 each)
    assert example_weights(runs, 3, 2, 0.5).tolist() == pytest.approx([0.5, 0.5, 1.0, 0.5, 0.25, 0.25])
    assert example_weights(runs, None, 2, 0.5).tolist() == pytest.approx([1 / 3] * 6)  # no labels: one mean


def test_label_weight_makes_the_labels_a_mean_of_their_own_in_the_update():
    """One SGD step of the ply with labels is the step of mean(TD loss) + label_weight * mean(label loss)."""
    trainer = make_trainer(lr=0.1, seats=[1], rule_labels=True, label_weight=0.5)
    play_script(trainer, [0, 7, 4, 8])  # X (0, 4) to move faces O's threat on 6: a TD target and 5 labels
    before = copy.deepcopy(trainer.net)
    batch = trainer.step(np.array([6]))
    assert len(batch.targets) == 6

    def stepped(weights):
        net = copy.deepcopy(before)
        per = F.huber_loss(net(torch.from_numpy(batch.obs)), torch.from_numpy(batch.targets), reduction="none")
        (per * torch.tensor(weights)).sum().backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= 0.1 * p.grad
        return torch.cat([p.flatten() for p in net.parameters()])

    after = torch.cat([p.detach().flatten() for p in trainer.net.parameters()])
    torch.testing.assert_close(after, stepped([1.0] + [0.5 / 5] * 5))
    assert not torch.allclose(after, stepped([1 / 6] * 6))  # one mean over all six: another step


def test_exact_losses_score_minus_one_in_move_selection():
    game = make_game("4x4x4")
    net = Trainer(game, NETWORK, Config(), 1, np.random.default_rng(0)).net
    state = game.initial_state()
    for a in [21, 0, 42, 1, 63, 2]:  # O holds 0, 1, 2: X must take 3
        state = state.apply(a)
    games = BatchedGames.from_states([state])
    ruled = selection_values(net, games, np.array([0]), Rules(losses=True))[0]
    alone = selection_values(net, games, np.array([0]), NO_RULES)[0]
    others = [a for a in state.legal_actions() if a != 3]
    assert (ruled[others] == -1.0).all() and float(ruled[3]) == float(alone[3])
    player = DQNPlayer(game, net, rules=Rules(losses=True))
    assert player.act(state, np.random.default_rng(0)) == 3


def test_frozen_pool_keeps_the_newest_copies_and_round_trips(tmp_path):
    trainer = make_trainer(num_envs=8, lr=0.05, switch_episode=10, refresh_every=10, frozen_pool=3)
    while trainer.episodes < 80:
        trainer.step()
    assert trainer.frozen_refreshes >= 7 and len(trainer.pool) == 3
    assert ((trainer.pool_index >= 0) & (trainer.pool_index < 3)).all()
    assert len(set(trainer.pool_index.tolist())) > 1  # games draw different copies
    state = trainer.state_dict()
    other = make_trainer(num_envs=8, lr=0.05, switch_episode=10, refresh_every=10, frozen_pool=3)
    other.load_state_dict(state)
    for a, b in zip(trainer.pool, other.pool, strict=True):
        for k, v in a.state_dict().items():
            assert torch.equal(v, b.state_dict()[k])
    continue_identically(trainer, other, 30)


def test_fork_defence_labels_find_afterstates_that_allow_an_opponent_fork():
    game = make_game("3x3")
    # X: 4, 5; O: 3, 8; X to move. O's 6 would make two winning cells (0 and 7); X's 2 threatens 6,
    # so O's forced block there is that fork: 2 loses in two of O's moves, while 0, 6 and 7 stop the fork
    board = np.array([[0, 0, 0, -1, 1, 1, 0, 0, -1]], dtype=np.int8)
    x = np.array([1], np.int8)
    tactics = move_tactics(board, x, board == 0, game)
    t = rule_targets(np.array([0]), board.astype(np.float32), tactics, GAMMA, game, defence=9,
                     rng=np.random.default_rng(0))
    labelled = {int(np.flatnonzero(o != board[0])[0]): float(v) for o, v in zip(t.obs, t.targets, strict=True)}
    for a in np.flatnonzero(board[0] == 0):
        after = board.copy()
        after[0, a] = 1
        o = np.array([-1], np.int8)
        fork = move_tactics(after, o, after == 0, game).fork.any()
        assert (labelled.get(int(a)) == pytest.approx(-GAMMA)) == bool(fork), a
    assert labelled[2] == pytest.approx(-GAMMA) and not {0, 6, 7} & set(labelled)
    # at most ``defence`` moves per board are checked
    few = rule_targets(np.array([0]), board.astype(np.float32), tactics, GAMMA, game, defence=2,
                       rng=np.random.default_rng(0))
    assert len(few.targets) <= 2


def test_fork_rules_in_move_selection_take_a_fork_and_stop_the_opponents():
    game = make_game("3x3")
    net = make_trainer().net
    forks = Rules(losses=True, forks=True)
    # X: 0, 8; O: 2, 4; X to move must block 6, which also makes two winning cells (3 and 7)
    state = game.state_from_board([1, 0, -1, 0, -1, 0, 0, 0, 1])
    values = DQNPlayer(game, net, rules=forks).action_values(state)
    assert values == {6: pytest.approx(GAMMA), 1: -1.0, 3: -1.0, 5: -1.0, 7: -1.0}
    assert DQNPlayer(game, net, rules=forks).act(state, np.random.default_rng(0)) == 6
    # X: 4, 5; O: 3, 8; X to move: 2 forces O onto 6, O's fork
    state = game.state_from_board([0, 0, 0, -1, 1, 1, 0, 0, -1])
    values = DQNPlayer(game, net, rules=forks).action_values(state)
    assert values[2] == pytest.approx(-GAMMA) and all(values[a] > -GAMMA for a in (0, 6, 7))
    alone = DQNPlayer(game, net, rules=forks).without_rules().action_values(state)
    assert alone[2] != pytest.approx(-GAMMA)
    # the discount is the player's (its learner's), not the rules': a fork is worth it, in a copy too
    discounted = DQNPlayer(game, net, rules=forks, gamma=0.97).with_rules(forks)
    assert discounted.gamma == 0.97 and discounted.action_values(state)[2] == pytest.approx(-0.97)


def forcing_positions(game, count: int = 5, seed: int = 2):
    """``count`` positions of random games on ``game`` where the mover has a threat that forces a fork:
    ``(state, tactics, forcing)``, ``forcing`` the (cells,) mask of those moves (``threat_forks``)."""
    from ttt.games.threats import threat_forks

    rng = np.random.default_rng(seed)
    found = []
    for _ in range(300):
        state = game.initial_state()
        for _ in range(int(rng.integers(2, 8))):
            if state.is_terminal():
                break
            state = state.apply(int(rng.choice(state.legal_actions())))
        if state.is_terminal():
            continue
        b = np.array(state.board, np.int8)[None]
        me = np.array([state.to_play()], np.int8)
        legal = state.legal_mask()[None]
        t = move_tactics(b, me, legal, game)
        forcing = threat_forks(b, me, legal, game, t)[0]
        if forcing.any():
            found.append((state, t, forcing))
            if len(found) == count:
                return found
    raise AssertionError(f"fewer than {count} positions with a forcing threat")


def test_threat_rule_values_a_forcing_threat_at_gamma_squared():
    game = make_game("3x3x3")
    net = Trainer(game, NETWORK, Config(), 1, np.random.default_rng(0)).net
    player = DQNPlayer(game, net, rules=Rules(losses=True, forks=True, threats=1))
    for state, _, forcing in forcing_positions(game):
        values = player.action_values(state)
        for a in np.flatnonzero(forcing):
            assert values[int(a)] == pytest.approx(GAMMA**2)


def test_random_position_labels_join_the_update_and_resume_exactly(tmp_path):
    def trainer():
        return make_trainer(num_envs=4, lr=0.05, rule_labels=True, random_labels=6, rank_labels=4,
                            symmetry_augment=True)

    t = trainer()
    for _ in range(5):
        batch = t.step()
    extra = batch.rows == -1
    assert 0 < extra.sum() <= 6  # at most ``random_labels`` examples from the random-play games
    assert all(np.isclose(v, [1.0, -1.0, GAMMA]).any() for v in batch.targets[extra])
    torch.save(t.state_dict(), tmp_path / "t.pt")
    other = trainer()
    other.load_state_dict(torch.load(tmp_path / "t.pt", weights_only=True))
    continue_identically(t, other, 20)




def test_first_layer_learning_rate():
    t = make_trainer(lr=0.001, first_lr=0.02)
    groups = t.optimizer.param_groups
    assert [g["lr"] for g in groups] == [0.02, 0.001]
    assert {id(p) for p in groups[0]["params"]} == {id(p) for p in t.net.first.parameters()}
    assert len(groups[1]["params"]) == len(list(t.net.parameters())) - len(groups[0]["params"])
    assert len(make_optimizer(Config(), t.net).param_groups) == 1
    with pytest.raises(ValueError, match="first_lr"):
        Config(first_lr=-1.0)


def x_to_move_tactics(views: np.ndarray):
    """``(legal, tactics)`` of 3x3 boards ``views`` with X to move."""
    board = views.astype(np.int8)
    legal = board == 0
    return legal, move_tactics(board, np.ones(len(board), dtype=np.int8), legal, make_game("3x3"))


def rank_position(copies: int):
    """X to move holds 0 and 1 (2 wins); O holds 3 and 4 (5 wins for O): 6, 7 and 8 let O win.
    ``(position, views, legal, tactics)`` for ``copies`` copies of it."""
    position = view([0, 1], [3, 4])
    views = np.repeat(position[None], copies, axis=0)
    return position, views, *x_to_move_tactics(views)


def test_rank_pairs_follow_the_rules_order():
    position, views, legal, tactics = rank_position(10)
    higher, lower, above = rank_pairs(views, legal, tactics, 20, np.random.default_rng(0))
    np.testing.assert_array_equal(above, np.arange(20))  # one pair per position: lower i below higher i
    assert higher.shape == lower.shape == (20, 9)
    hi_cell = (higher - position).argmax(1)
    lo_cell = (lower - position).argmax(1)
    pairs = set(zip(hi_cell.tolist(), lo_cell.tolist(), strict=True))
    not_losing, losing = {2, 5}, {6, 7, 8}
    for h, lo in pairs:
        assert (h in not_losing and lo in losing) or (h == 2 and lo in {5, 6, 7, 8})
    assert any(lo == 5 for _, lo in pairs) and any(h == 5 for h, _ in pairs)  # both orders are drawn
    assert len(rank_pairs(views, legal, tactics, 4, np.random.default_rng(0))[0]) == 4  # count // 2 of each


def test_rank_loss_is_a_hinge_on_logits_and_teaches_the_order():
    game = make_game("3x3")
    torch.manual_seed(0)
    net = build_value_net(OmegaConf.create({"kind": "structured", "hidden": [8], "bias": True}), game)
    boards = torch.randint(-1, 2, (6, 9)).float()
    torch.testing.assert_close(torch.tanh(net.logit(boards)), net(boards))
    higher, lower = boards[:3], boards[3:]
    gap = net.logit(higher) - net.logit(lower)
    torch.testing.assert_close(rank_loss(net, higher, lower), torch.relu(1.0 - gap).mean())
    above = torch.tensor([2, 0, 2, 1])  # a higher board paired with several lower ones
    gap = net.logit(higher)[above] - net.logit(boards[[3, 4, 5, 5]])
    torch.testing.assert_close(rank_loss(net, higher, boards[[3, 4, 5, 5]], above), torch.relu(1.0 - gap).mean())
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    for _ in range(200):
        opt.zero_grad()
        rank_loss(net, higher, lower).backward()
        opt.step()
    assert float(rank_loss(net, higher, lower).detach()) < 0.05
    assert (net.logit(higher) - net.logit(lower) > 0.9).all()  # the margin, nearly



def test_rank_pairs_with_moves_pair_the_higher_move_with_the_lower_moves_valued_most():
    position, views, legal, tactics = rank_position(3)  # 2 wins, 5 blocks, 6, 7 and 8 lose
    values = np.full((3, 9), -np.inf, dtype=np.float32)
    values[:, [2, 5, 6, 7, 8]] = [-0.5, 0.1, 0.2, 0.9, 0.3]

    def cells(moves):
        higher, lower, above = rank_pairs(views, legal, tactics, 4, np.random.default_rng(0), values, moves)
        assert len(higher) == 4  # each position's higher move once: count // 2 = 2 positions of each order
        return (higher[above] - position).argmax(1).tolist(), (lower - position).argmax(1).tolist()

    # every lower move: non-losing above losing, 2 positions x 3; the win above non-wins, 2 x 4
    hi, lo = cells(9)
    assert sorted(lo[:6]) == [6, 6, 7, 7, 8, 8] and set(hi[:6]) <= {2, 5}
    assert sorted(lo[6:]) == [5, 5, 6, 6, 7, 7, 8, 8] and set(hi[6:]) == {2}
    for i in (0, 3, 6, 10):  # each position pairs one higher move with all its lower ones
        assert len(set(hi[i: i + 3])) == 1
    # the two lower moves valued most: 7 (0.9) and 8 (0.3) below a block, 7 and 8 below the win
    hi, lo = cells(2)
    assert sorted(lo) == [7, 7, 7, 7, 8, 8, 8, 8] and len(hi) == 8
    assert cells(5) == cells(9)  # no position has more than 4 lower moves



def test_rank_pairs_forced_take_the_first_order_only_from_forced_blocks():
    _, views, _, _ = rank_position(2)  # 2 wins and 5 blocks: two moves do not lose
    forced = view([0, 7], [3, 4])  # X to move, no win: 5 is the one move that does not lose
    views = np.concatenate([views, np.repeat(forced[None], 2, axis=0)])
    legal, tactics = x_to_move_tactics(views)
    (safe, _), (win, _) = rank_orders(legal, tactics, forced=True)
    assert safe.sum(1).tolist() == [0, 0, 1, 1] and safe[2:, 5].all()
    assert win.sum(1).tolist() == [1, 1, 0, 0]  # the second order as without
    assert rank_orders(legal, tactics)[0][0].sum(1).tolist() == [2, 2, 1, 1]
    values = np.zeros((4, 9), dtype=np.float32)
    higher, lower, above = rank_pairs(views, legal, tactics, 8, np.random.default_rng(0), values, 9, forced=True)
    first = lower[:8]  # the two forced positions, each with its 4 losing moves 1, 2, 6, 8 below the block 5
    assert sorted((first - forced).argmax(1).tolist()) == [1, 1, 2, 2, 6, 6, 8, 8]
    assert ((higher[above[:8]] - forced).argmax(1) == 5).all()
    assert len(lower) == 8 + 2 * 4  # then the win of the first two positions above their 4 non-wins each


def test_rank_pairs_moves_wins_false_pair_one_random_non_win():
    position, views, legal, tactics = rank_position(4)  # 2 wins, 5 blocks, 6, 7 and 8 lose
    values = np.full((4, 9), -np.inf, dtype=np.float32)
    values[:, [2, 5, 6, 7, 8]] = [-0.5, 0.1, 0.2, 0.9, 0.3]
    higher, lower, above = rank_pairs(views, legal, tactics, 8, np.random.default_rng(0), values, 2,
                                      moves_wins=False)
    lo = (lower - position).argmax(1)
    assert len(higher) == 8 and len(lower) == 4 * 2 + 4  # the first order K=2 each, the second one each
    assert sorted(lo[:8].tolist()) == [7, 7, 7, 7, 8, 8, 8, 8]  # the losing moves valued most
    np.testing.assert_array_equal(above[8:], np.arange(4, 8))
    assert set(lo[8:].tolist()) <= {5, 6, 7, 8} and ((higher[4:] - position).argmax(1) == 2).all()
    # values without moves: one random pair per position
    assert len(rank_pairs(views, legal, tactics, 8, np.random.default_rng(0), values)[1]) == 8


def test_rank_labels_alone_add_pairs_and_no_labelled_afterstates():
    t = make_trainer(num_envs=4, lr=0.05, rank_labels=8)
    for _ in range(6):
        batch = t.step()
        assert not (batch.rows == -1).any()  # no rule-labelled afterstates from the random-play games
    assert len(t.part("labels").games[0]) == 8
    _, pairs = position_labels(t)
    assert 0 < len(pairs[0]) <= 8 and pairs[0].shape == pairs[1].shape


def trainer_at_rank_position(**agent):
    """A 3x3 trainer with 4 games of random play after 6 plies, every one of them set to the position of
    ``rank_position`` (X to move: 2 wins, 5 blocks, 6, 7 and 8 lose): ``(trainer, position, afterstates)``,
    the position's 9 afterstates as boards (illegal ones too)."""
    t = make_trainer(num_envs=4, lr=0.05, rank_labels=8, rank_moves=2, **agent)
    for _ in range(6):
        t.step()
    t.part("labels").games[0].board[:] = 0
    t.part("labels").games[0].board[:, [0, 1, 3, 4]] = [1, 1, -1, -1]  # X to move: 2 wins, 5 blocks, 6, 7 and 8 lose
    t.part("labels").games[0].to_play[:] = 1
    t.part("labels").games[0].done[:] = False
    position = torch.as_tensor(t.part("labels").games[0].board[0], dtype=torch.float32)
    after = position.repeat(9, 1)
    after[torch.arange(9), torch.arange(9)] = 1.0
    return t, position, after


def test_rank_moves_in_the_trainer_pair_each_position_with_its_k_lower_moves():
    t, position, after = trainer_at_rank_position()
    higher, lower, above = position_labels(t)[1]
    assert len(higher) == 8 and len(lower) == 8 * 2  # 4 positions of each order, 2 pairs each
    assert sorted(above.tolist()) == sorted(2 * list(range(8)))
    z = t.net.logit(after).detach()

    def top2(cells):
        return sorted(cells, key=lambda c: -float(z[c]))[:2]

    expected = sorted(4 * top2([6, 7, 8]) + 4 * top2([5, 6, 7, 8]))
    assert sorted((torch.as_tensor(lower) - position).argmax(1).tolist()) == expected



# ---- what each remaining option does


def greedy_share(trainer: Trainer, net, learners: bool, plies: int) -> float:
    """The share of the moves (of the learners, or of their opponents) over ``plies`` plies that are the
    argmax of ``net``'s afterstate values under the trainer's rules."""
    greedy = total = 0
    for _ in range(plies):
        g = trainer.games
        mask = trainer.learner_mask() if learners else ~trainer.learner_mask()
        rows = np.flatnonzero(mask)
        best = selection_values(net, g, rows, trainer.rules).argmax(1).numpy() if len(rows) else []
        before = g.board.copy()
        trainer.step()
        for row, cell in zip(rows, best, strict=True):
            if g.num_moves[row] == 0:  # the game ended and restarted: its move is gone
                continue
            (moved,) = np.flatnonzero(g.board[row] != before[row])
            greedy += int(moved == cell)
            total += 1
    assert total > 20
    return greedy / total


def test_epsilon_schedule_decays_linearly_to_epsilon_final():
    settings = Config(epsilon=0.5, epsilon_final=0.1, epsilon_decay_episodes=100)
    assert [epsilon_at(settings, e) for e in (0, 50, 100, 1000)] == pytest.approx([0.5, 0.3, 0.1, 0.1])
    assert epsilon_at(Config(epsilon=0.5, epsilon_final=0.1), 10**6) == 0.5  # no decay: constant epsilon
    # the trainer explores at the rate of the schedule: all at random first, greedy once it has decayed
    t = make_trainer(num_envs=8, epsilon=1.0, epsilon_final=0.0, epsilon_decay_episodes=16, opponent_after="random")
    assert greedy_share(t, t.net, learners=True, plies=8) < 0.5
    while t.episodes < 16:
        t.step()
    assert greedy_share(t, t.net, learners=True, plies=12) == 1.0


@pytest.mark.parametrize("frozen_epsilon", [0.0, 1.0])
def test_frozen_epsilon_is_the_frozen_opponents_exploration(frozen_epsilon):
    t = make_trainer(num_envs=8, opponent="frozen", opponent_after="frozen", frozen_epsilon=frozen_epsilon)
    share = greedy_share(t, t.frozen, learners=False, plies=12)
    assert share == 1.0 if frozen_epsilon == 0.0 else share < 0.5


@pytest.mark.parametrize("exact_wins", [True, False])
def test_exact_wins_value_a_winning_move_at_its_reward_in_training_moves(exact_wins):
    t = make_trainer(epsilon=0.0, exact_wins=exact_wins, seats=[1])
    for cell in (0, 3, 1, 4):  # X holds 0 and 1, O holds 3 and 4: X (the learner) wins at 2
        t.games.play(np.array([cell]))
    values = selection_values(t.net, t.games, np.array([0]), t.rules)[0]
    assert t.rules.wins is exact_wins and (float(values[2]) == 1.0) is exact_wins
    if exact_wins:  # the learner takes its win; the network alone values it below 1
        t.step()
        assert t.episodes == 1 and t.games.num_moves[0] == 0


@pytest.mark.parametrize(("play_forks", "play_threats"), [(False, 0), (True, 2)])
def test_play_forks_and_play_threats_are_the_trained_players_rules_not_the_trainers(
        compose_train, tmp_path, play_forks, play_threats):
    from ttt.train import train

    cfg = compose_train(["+experiment=dqn_33", "episodes=8", "eval_every=0", "eval_opponents=[random]",
                         "agent.final_eval_games=2", "num_envs=4", "++agent.parts.rules.exact_forks=false",
                         "++agent.parts.rules.exact_losses=false", "++agent.parts.labels.random_labels=0",
                         f"++agent.parts.rules.play_forks={play_forks}",
                         f"++agent.parts.rules.play_threats={play_threats}"])
    train(cfg)
    payload = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert payload["rules"]["forks"] is play_forks and payload["rules"]["threats"] == play_threats
    player = load_player(tmp_path / "run" / "checkpoint.pt")
    assert player.rules == Rules(wins=True, forks=play_forks, threats=play_threats) and player.gamma == cfg.agent.gamma
    assert training_rules(Config(**upgrade_agent(dict(play_forks=play_forks, play_threats=play_threats)))) == Rules(
        forks=False, threats=0)


def test_trainer_state_with_the_opponent_codes_under_kind_loads_alike():
    t = make_trainer(num_envs=4, lr=0.05, opponent="random", opponent_after="benchmark", switch_episode=2,
                     benchmark_fraction=0.5)
    for _ in range(12):
        t.step()
    state = t.state_dict()
    state["envs"]["kind"] = state["envs"].pop("opponent")
    other = make_trainer(num_envs=4, lr=0.05, opponent="random", opponent_after="benchmark", switch_episode=2,
                         benchmark_fraction=0.5)
    other.load_state_dict(state)
    np.testing.assert_array_equal(other.opponent, t.opponent)
    continue_identically(t, other, 10)


def test_exact_forks_values_forks_in_the_training_moves():
    from ttt.agents.dqn import Config, training_rules
    from ttt.agents.dqn.moves import selection_values

    game = make_game("3x3")
    games = BatchedGames(game, 1)
    for cell in (0, 4, 8, 2):  # X corner, O centre, X corner, O corner: X to move has a fork at 6
        games.play(np.array([cell]))
    t = move_tactics(games.board, games.to_play, games.legal_mask(), game)
    forks = np.flatnonzero(t.fork[0])
    assert forks.tolist() and not t.win[0].any()
    torch.manual_seed(0)
    net = build_value_net(OmegaConf.create({"kind": "structured", "hidden": [8], "bias": True}), game)
    with_forks = training_rules(Config(**upgrade_agent(dict(exact_forks=True, gamma=0.9))))
    without = training_rules(Config(gamma=0.9))
    assert with_forks.forks and not without.forks
    valued = selection_values(net, games, np.array([0]), with_forks)[0]
    plain = selection_values(net, games, np.array([0]), without)[0]
    assert torch.allclose(valued[forks], torch.tensor(0.9)) and not torch.allclose(plain[forks], torch.tensor(0.9))


def test_search_labels_train_unvalued_afterstates_toward_the_opponents_best_reply():
    from ttt.agents.dqn import Config
    from ttt.agents.dqn.labels import reply_targets
    from ttt.games.exact import Rules

    game = make_game("3x3")
    torch.manual_seed(0)
    net = build_value_net(OmegaConf.create({"kind": "structured", "hidden": [8], "bias": True}), game)
    games = BatchedGames(game, 32)
    rng = np.random.default_rng(0)
    for _ in range(3):
        games.play(np.array([np.flatnonzero(row)[0] for row in games.legal_mask()]))
    rules = training_rules(Config(gamma=0.9))
    labels, _ = random_position_labels(games, LabelSettings(random_labels=64, search_labels=True), net, rng, 0.9, rules)
    plain, _ = random_position_labels(games, LabelSettings(random_labels=64), net, np.random.default_rng(0), 0.9, rules)
    ruled = np.isin(labels.targets, [1.0, -1.0]) | ((labels.targets > 0) & np.isclose(labels.targets, 0.9))
    searched = labels.obs[~ruled]
    assert len(searched) > 0 and np.isin(plain.targets, [1.0, -1.0, np.float32(0.9)]).all()
    want = reply_targets(net, searched, game, 0.9, Rules())
    np.testing.assert_allclose(labels.targets[~ruled], want, rtol=1e-6)


@pytest.mark.parametrize("play_threats, final_group", [(0, "eval"), (1, "eval_final")])
def test_a_final_evaluation_with_other_rules_than_the_runs_is_logged_apart(compose_train, tmp_path, play_threats,
                                                                          final_group):
    from ttt.harness.curves import read_run
    from ttt.train import train

    train(compose_train(["game=4x4x4", "episodes=8", "num_envs=4", "eval_every=4", "eval_games=2",
                         "eval_opponents=[random]", "eval_tactics=false", "agent.final_eval_games=2",
                         f"++agent.parts.rules.play_threats={play_threats}"]))
    curves = read_run(tmp_path / "run" / "tb").curves
    assert curves["eval/random/score"].steps.tolist() == ([4, 8] if final_group == "eval" else [4])
    assert curves[f"{final_group}/random/score"].steps.tolist()[-1] == 8


def test_a_target_network_values_the_chosen_move_and_the_learning_network_chooses():
    from ttt.agents.dqn.moves import selection_values

    def first_afterstate_target(trainer, move):
        """O's target for its first afterstate (X corner 0, O centre 4) when O plays ``move``."""
        batch = trainer.step(np.array([move]))
        mine = np.zeros(9, dtype=np.float32)
        mine[4], mine[0] = 1.0, -1.0
        (i,) = np.flatnonzero((batch.obs == mine).all(1))
        return batch.targets[i]

    opening = (0, 4, 1)  # X corner, O centre, X edge: the X move trains X's first afterstate
    t = make_trainer(opponent="self_play", opponent_after="self_play", lr=0.5, target_every=1000)
    for cell in opening:
        t.step(np.array([cell]))
    copy_values = selection_values(t.part("target").targets[0], t.games, np.array([0]), t.rules)[0].numpy()
    own_values = selection_values(t.net, t.games, np.array([0]), t.rules)[0].numpy()
    legal = np.flatnonzero(np.isfinite(own_values))
    move = int(legal[np.abs(copy_values[legal] - own_values[legal]).argmax()])
    assert abs(copy_values[move] - own_values[move]) > 1e-3  # the learning network has moved away from the copy
    assert first_afterstate_target(t, move) == pytest.approx(GAMMA * copy_values[move])
    # without the option the same ply bootstraps from the learning network
    plain = make_trainer(opponent="self_play", opponent_after="self_play", lr=0.5)
    for cell in opening:
        plain.step(np.array([cell]))
    assert first_afterstate_target(plain, move) == pytest.approx(GAMMA * own_values[move])


def test_the_target_network_is_re_taken_every_target_every_games_and_resumes():
    def same(a, b):
        return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))

    t = make_trainer(num_envs=4, opponent="self_play", opponent_after="self_play", lr=0.5, target_every=3)
    target = t.part("target")
    assert same(target.targets[0], t.net) and target.taken_at[0] == 0
    differed = False
    while t.episodes < 3:
        t.step()
        if t.episodes < 3:
            assert target.taken_at[0] == 0
            differed = differed or not same(target.targets[0], t.net)
    assert differed and target.taken_at[0] == t.episodes and same(target.targets[0], t.net)
    t.step()
    other = make_trainer(num_envs=4, opponent="self_play", opponent_after="self_play", lr=0.5, target_every=3)
    other.load_state_dict(t.state_dict())
    assert same(other.part("target").targets[0], target.targets[0])
    assert other.part("target").taken_at[0] == target.taken_at[0]
    continue_identically(t, other, 12)


def test_the_learning_rate_falls_linearly_to_lr_final():
    from ttt.agents.dqn.settings import lr_scale_at

    cfg = Config(lr=0.01, lr_final=0.001, lr_decay_episodes=100)
    assert [lr_scale_at(cfg, e) for e in (0, 50, 100, 200)] == pytest.approx([1.0, 0.55, 0.1, 0.1])
    assert lr_scale_at(Config(lr=0.01), 50) == 1.0 and lr_scale_at(Config(lr=0.01, lr_final=0.001), 50) == 1.0
    t = make_trainer(num_envs=4, lr=0.01, lr_final=0.001, lr_decay_episodes=100, first_lr=0.02)
    t.run_episodes[0] = 50
    while not len(t.step().targets):
        pass
    assert [g["lr"] for g in t.optimizer.param_groups] == pytest.approx([0.011, 0.0055])


def test_lambda_targets_by_hand():
    # one finished game: seat 0 (X) played 3 afterstates, its last a win; seat 1 (O) played 2, and lost
    obs = np.arange(2 * 3 * 9, dtype=np.float32).reshape(1, 2, 3, 9)
    boot = np.array([[[0.3, 0.4, 1.0], [0.1, 0.2, 0.0]]], np.float32)
    t = lambda_targets(np.array([7]), obs, boot, np.array([[3, 2]]), np.array([[1.0, -1.0]], np.float32),
                       GAMMA, 0.5)
    g1 = GAMMA * (0.5 * 1.0 + 0.5 * 1.0)  # X: G2 = +1 (the win), G1 from boot 1.0 and G2
    g0 = GAMMA * (0.5 * 0.4 + 0.5 * g1)
    o0 = GAMMA * (0.5 * 0.2 + 0.5 * -1.0)  # O: G1 = -1 (the loss), G0 from boot 0.2 and G1
    np.testing.assert_allclose(t.targets, [g0, g1, 1.0, o0, -1.0], rtol=1e-6)
    np.testing.assert_array_equal(t.obs, [obs[0, 0, 0], obs[0, 0, 1], obs[0, 0, 2], obs[0, 1, 0], obs[0, 1, 1]])
    np.testing.assert_array_equal(t.rows, [7] * 5)
    # lam = 0: TD(0)'s targets, gamma times the next afterstate's bootstrap; lam = 1: the discounted outcome
    zero = lambda_targets(np.array([7]), obs, boot, np.array([[3, 2]]), np.array([[1.0, -1.0]], np.float32),
                          GAMMA, 0.0)
    np.testing.assert_allclose(zero.targets, [GAMMA * 0.4, GAMMA * 1.0, 1.0, GAMMA * 0.2, -1.0], rtol=1e-6)
    one = lambda_targets(np.array([7]), obs, boot, np.array([[3, 2]]), np.array([[1.0, -1.0]], np.float32),
                         GAMMA, 1.0)
    np.testing.assert_allclose(one.targets, [GAMMA ** 2, GAMMA, 1.0, -GAMMA, -1.0], rtol=1e-6)


def test_td_lambda_trains_a_games_afterstates_when_it_ends_and_tiny_lambda_gives_td0s_targets():
    self_play = dict(opponent="self_play", opponent_after="self_play")
    mc = play_script(make_trainer(seats=[1], td_lambda=1.0, **self_play), X_BEATS_O[0])
    assert [len(t) for _, t in mc] == [0, 0, 0, 0, 5]  # nothing until the game ends, then all five
    obs, targets = mc[4]
    np.testing.assert_allclose(targets, [GAMMA ** 2, GAMMA, 1.0, -GAMMA, -1.0], rtol=1e-6)
    np.testing.assert_array_equal(obs[:3], [view([0], []), view([0, 1], [4]), view([0, 1, 2], [4, 8])])
    np.testing.assert_array_equal(obs[3:], [view([4], [0]), view([4, 8], [0, 1])])
    # the network does not learn (lr 0): lambda near 0 gives the same (afterstate, target) pairs as TD(0)
    for script, seats in (X_WINS, X_BEATS_O, DRAW):
        td0 = play_script(make_trainer(seats=[seats], **self_play), script)
        tiny = play_script(make_trainer(seats=[seats], td_lambda=1e-9, **self_play), script)

        def pairs(plies):
            return sorted((o.tobytes(), round(float(t), 5)) for obs, ts in plies for o, t in zip(obs, ts, strict=True))
        assert pairs(tiny) == pairs(td0) and len(pairs(td0)) == len(script)


def test_td_lambda_traces_resume_mid_game_exactly():
    t = make_trainer(num_envs=4, lr=0.05, td_lambda=0.7, opponent="self_play", opponent_after="self_play")
    for _ in range(7):  # games under way (some have ended and restarted)
        t.step()
    assert (t.trace_len > 0).any()
    other = make_trainer(num_envs=4, lr=0.05, td_lambda=0.7, opponent="self_play", opponent_after="self_play")
    other.load_state_dict(t.state_dict())
    np.testing.assert_array_equal(other.trace_obs, t.trace_obs)
    continue_identically(t, other, 20)
    assert t.episodes > 4
