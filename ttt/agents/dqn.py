"""TD(0) afterstate value learning with a neural network (van de Steeg, Drugan & Wiering 2015, Algorithm 1).

Reads top to bottom: settings, move selection, the TD(0) rule over a batch of games, the curriculum,
the training loop with evaluation and checkpoints, the trained player, and a throughput benchmark.

The network scores afterstates V(s'): the board right after a move, seen from the player who just
moved (+1 own piece, -1 opponent, 0 empty), so one network plays either seat.

The learning rule, per learning seat of each game:

* after each of its moves except its first, V(previous afterstate) moves toward
  ``gamma * V(new afterstate)`` (intermediate rewards are 0), the target detached;
* when its own move ends the game, the new afterstate is terminal: its exact value is the reward
  r (+1 win, 0 draw), so the previous afterstate's target is ``gamma * r`` and the terminal
  afterstate itself moves toward r (so that winning moves score +1 when moves are chosen);
* when the opponent's move ends the game, its last afterstate moves toward the reward (-1 loss,
  0 draw), with no bootstrap. Losses are learned.

``num_envs`` games run side by side; each ply is one forward pass over every legal afterstate of
every game where a learner moves, and one optimiser step over every TD target of that ply. With
``num_envs=1`` this is exactly the online per-game algorithm.

TensorBoard tags (besides the ``eval/`` tags of ``ttt.training``): ``train/td_loss``,
``train/epsilon``, ``train/opponent`` (0 random, 1 frozen, 2 benchmark, 3 self_play),
``train/episodes_per_sec``, ``train/benchmark_share`` (share of the games in progress played against
the benchmark player) and ``train/frozen_refreshes`` (copies taken of the frozen opponent).
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf

from ttt.checkpoint import CheckpointError, save_checkpoint
from ttt.config import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, UNIT, check_ranges
from ttt.games import BatchedGames, Game, State, make_game, random_legal_actions
from ttt.games.threats import completing_moves
from ttt.nets.structured import ValueNet, build_value_net
from ttt.players import BatchPlayer, BenchmarkPlayer
from ttt.training import OPPONENT_PHASES, Run, run_command


# ---------------------------------------------------------------------------------------- settings
@dataclass
class Config:
    """Settings of ``configs/agent/dqn.yaml`` (checked by Hydra at composition)."""

    name: str = "dqn"
    optimizer: str = "adam"  # adam | sgd
    lr: float = 1e-3
    gamma: float = 0.9
    loss: str = "huber"  # huber | mse
    epsilon: float = 0.1  # exploration rate at the start
    epsilon_final: float = 0.1  # reached linearly after epsilon_decay_episodes (equal: constant)
    epsilon_decay_episodes: int = 0
    opponent: str = "random"  # random | frozen | benchmark | self_play: before switch_episode
    opponent_after: str = "frozen"  # from switch_episode on
    switch_episode: int = 5000
    refresh_every: int = 0  # re-take the frozen copy every this many episodes (0 = never)
    frozen_epsilon: float = 0.0  # the frozen copy's own exploration
    benchmark_fraction: float = 0.0  # share of games against the benchmark player after the switch
    final_eval_games: int = 2000  # games per opponent in the final evaluation (half per seat)
    exact_wins: bool = True  # a winning afterstate scores its reward (+1) in move selection
    symmetry_augment: bool = False  # train each target on a random symmetric image of its afterstate


OPPONENTS = tuple(OPPONENT_PHASES)  # random, frozen, benchmark, self_play


def check_config(a) -> None:
    """Fail early, naming the key, on values the schema's types cannot rule out."""
    for key in ("opponent", "opponent_after"):
        if getattr(a, key) not in OPPONENTS:
            raise ValueError(f"agent.{key}={getattr(a, key)!r}: choose one of {', '.join(OPPONENTS)}")
    if a.optimizer not in ("adam", "sgd"):
        raise ValueError(f"agent.optimizer={a.optimizer!r}: choose adam or sgd")
    if a.loss not in ("huber", "mse"):
        raise ValueError(f"agent.loss={a.loss!r}: choose huber or mse")
    if not 0.0 <= a.benchmark_fraction <= 1.0:
        raise ValueError(f"agent.benchmark_fraction={a.benchmark_fraction}: must be in [0, 1]")


def epsilon_at(a, episode: int) -> float:
    """The exploration rate after ``episode`` training games (linear schedule)."""
    if a.epsilon_decay_episodes <= 0:
        return float(a.epsilon)
    frac = min(episode / a.epsilon_decay_episodes, 1.0)
    return float(a.epsilon + frac * (a.epsilon_final - a.epsilon))


def make_optimizer(a, net: torch.nn.Module) -> torch.optim.Optimizer:
    if a.optimizer == "sgd":
        return torch.optim.SGD(net.parameters(), lr=a.lr)
    return torch.optim.Adam(net.parameters(), lr=a.lr)


# ---------------------------------------------------------------------------------- move selection
@torch.inference_mode()
def afterstate_values(net: ValueNet, games: BatchedGames, rows: np.ndarray, exact_wins: bool = True) -> torch.Tensor:
    """(len(rows), cells) values of every legal afterstate of the games ``rows``, -inf where illegal.

    One forward pass, no autograd; the board is seen from the player to move, whose piece is +1.
    With ``exact_wins`` a move that completes a line scores its reward, +1: a terminal afterstate's
    value is the reward, not an estimate (a tanh output only approaches 1, and a position one move
    from a win is worth gamma, so the estimate alone ranks them too close).
    """
    board, to_play, legal = games.board[rows], games.to_play[rows], games.legal_mask()[rows]
    boards = torch.from_numpy((board * to_play[:, None]).astype(np.float32))
    values = net.afterstate_values(boards, torch.from_numpy(legal))
    if exact_wins:
        values[torch.from_numpy(completing_moves(board, to_play, legal, games.game))] = 1.0
    return values


def epsilon_greedy(values: torch.Tensor, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Argmax of each row (illegal entries are -inf), or with probability epsilon a random legal move."""
    values = values.numpy()
    actions = values.argmax(1)
    if epsilon > 0:
        explore = rng.random(len(actions)) < epsilon
        if explore.any():
            actions[explore] = random_legal_actions(np.isfinite(values[explore]), rng)
    return actions


# ------------------------------------------------------------------------- TD(0) over a batch of games
# the per-game arrays a checkpoint holds: the BatchedGames state, then the trainer's own
GAME_ARRAYS = ("board", "to_play", "done", "winner", "num_moves", "last_action")
TRAINER_ARRAYS = ("agent_seat", "kind", "prev", "has_prev")


class Trainer:
    """``num_envs`` training games, the learning network, its optimiser and the opponents.

    ``step()`` plays one ply in every game and makes one TD(0) update; it returns the games that
    ended. Everything it needs to continue is in ``state_dict()``.
    """

    def __init__(self, game: Game, network_cfg, agent_cfg, num_envs: int, rng: np.random.Generator,
                 net: ValueNet | None = None) -> None:
        # a plain dataclass: the loop reads settings every ply, and DictConfig access is slow
        agent_cfg = agent_cfg if isinstance(agent_cfg, Config) else Config(**OmegaConf.to_container(agent_cfg))
        check_config(agent_cfg)
        self.game, self.a, self.rng = game, agent_cfg, rng
        self.net = build_value_net(network_cfg, game) if net is None else net
        self.optimizer = make_optimizer(agent_cfg, self.net)
        self.frozen: ValueNet | None = None
        self.frozen_taken_at = -1
        self.frozen_refreshes = 0
        self.benchmark = BenchmarkPlayer(game)
        self.games = BatchedGames(game, num_envs)
        envs = np.arange(num_envs)
        self.agent_seat = np.where(envs % 2 == 0, 1, -1).astype(np.int8)  # seats alternate per game
        self.kind = np.zeros(num_envs, dtype=np.int8)  # each game's opponent (OPPONENT_PHASES code)
        self.prev = np.zeros((num_envs, 2, game.num_cells), dtype=np.float32)  # last afterstate per seat
        self.has_prev = np.zeros((num_envs, 2), dtype=bool)
        self.episodes = 0
        self.steps = 0
        self.loss_sum, self.loss_count = 0.0, 0
        for e in envs:
            self.kind[e] = self._draw_opponent()
        self._refresh_frozen()
        self.last_batch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # ---- curriculum
    def phase(self) -> str:
        """The opponent of games that start now."""
        return self.a.opponent if self.episodes < self.a.switch_episode else self.a.opponent_after

    def phase_label(self) -> str:
        """The opponents of games that start now, for people: e.g. ``80% benchmark / 20% frozen``."""
        name, share = self.phase(), self.a.benchmark_fraction
        if self.episodes < self.a.switch_episode or share <= 0:
            return name
        return "benchmark" if share >= 1 else f"{share:.0%} benchmark / {1 - share:.0%} {name}"

    def _draw_opponent(self) -> int:
        name = self.phase()
        if self.episodes >= self.a.switch_episode and self.a.benchmark_fraction > 0:
            if self.rng.random() < self.a.benchmark_fraction:
                name = "benchmark"
        return OPPONENT_PHASES[name]

    def _refresh_frozen(self) -> None:
        """Take a frozen copy of the weights when the curriculum switches to it, and every refresh_every."""
        if self.phase() != "frozen" and self.a.opponent != "frozen":
            return
        due = self.frozen is None or (self.a.refresh_every > 0
                                      and self.episodes - self.frozen_taken_at >= self.a.refresh_every)
        if due:
            self.frozen = copy.deepcopy(self.net).requires_grad_(False)
            self.frozen_taken_at = self.episodes
            self.frozen_refreshes += 1

    def learner_mask(self) -> np.ndarray:
        """Games whose player to move learns: the agent's seat, or both seats in self-play games."""
        return (self.games.to_play == self.agent_seat) | (self.kind == OPPONENT_PHASES["self_play"])

    # ---- one ply in every game
    def step(self, actions: np.ndarray | None = None) -> np.ndarray:
        """Play one ply everywhere and learn from it; ``actions`` (one per game) scripts every move."""
        g, rng = self.games, self.rng
        mover = g.to_play.copy()
        learn = self.learner_mask()
        lrn = np.flatnonzero(learn)
        chosen = np.full(len(g), -1, dtype=np.int64)
        values = afterstate_values(self.net, g, lrn, self.a.exact_wins) if len(lrn) else None
        if actions is not None:
            chosen[:] = actions
        else:
            if len(lrn):
                chosen[lrn] = epsilon_greedy(values, epsilon_at(self.a, self.episodes), rng)
            self._opponent_moves(np.flatnonzero(~learn), chosen)
        new_value = values[np.arange(len(lrn)), chosen[lrn]].numpy() if len(lrn) else np.zeros(0)
        # the learners' new afterstates, from the mover's view
        after = (g.board[lrn] * mover[lrn, None]).astype(np.float32)
        after[np.arange(len(lrn)), chosen[lrn]] = 1.0

        ended = g.step(chosen)
        done = g.done
        reward = (g.winner.astype(np.int64) * mover).astype(np.float32)  # from the mover's view, 0 if not over

        obs, targets, rows = [], [], []
        gamma = float(self.a.gamma)
        seat = (mover[lrn] < 0).astype(np.int64)
        # 1. the mover's previous afterstate -> gamma * V(new), or gamma * r when the new one is terminal
        fin, r = done[lrn], reward[lrn]
        boot = np.where(fin, r, new_value)
        has = self.has_prev[lrn, seat]
        obs.append(self.prev[lrn[has], seat[has]])
        targets.append(gamma * boot[has])
        rows.append(lrn[has])
        # 2. a terminal afterstate of the mover -> r
        obs.append(after[fin])
        targets.append(r[fin])
        rows.append(lrn[fin])
        # 3. when the game ends, the other seat's last afterstate -> its reward (-r), no bootstrap
        other = (mover[ended] > 0).astype(np.int64)  # seat index of the player who did not move
        has = self.has_prev[ended, other]
        obs.append(self.prev[ended[has], other[has]])
        targets.append(-reward[ended[has]])
        rows.append(ended[has])
        self._update(np.concatenate(obs), np.concatenate(targets).astype(np.float32), np.concatenate(rows))

        # remember the learners' afterstates; start new games where games ended
        self.prev[lrn, seat] = after
        self.has_prev[lrn, seat] = True
        self.steps += 1
        if len(ended):
            self.has_prev[ended] = False
            self.agent_seat[ended] *= -1
            g.reset(done)
            for e in ended:
                self.episodes += 1
                self.kind[e] = self._draw_opponent()
            self._refresh_frozen()
        return ended

    def _opponent_moves(self, rows: np.ndarray, chosen: np.ndarray) -> None:
        g, rng = self.games, self.rng
        kinds = self.kind[rows]
        pick = rows[kinds == OPPONENT_PHASES["random"]]
        if len(pick):
            chosen[pick] = random_legal_actions(g.legal_mask()[pick], rng)
        pick = rows[kinds == OPPONENT_PHASES["benchmark"]]
        if len(pick):
            chosen[pick] = self.benchmark.act_batch(g, rng)[pick]
        pick = rows[kinds == OPPONENT_PHASES["frozen"]]
        if len(pick):
            # the frozen copy picks its own best move: the argmax of its afterstate values
            values = afterstate_values(self.frozen, g, pick, self.a.exact_wins)
            chosen[pick] = epsilon_greedy(values, self.a.frozen_epsilon, rng)

    def _update(self, obs: np.ndarray, targets: np.ndarray, rows: np.ndarray) -> None:
        """One optimiser step on the TD targets of this ply (targets are constants: detached)."""
        self.last_batch = (rows, obs, targets)
        if len(targets) == 0:
            return
        if self.a.symmetry_augment:
            # a symmetry maps lines to lines, so the value is unchanged; the per-line detector weights
            # of every line in an orbit then learn from a threat seen on any of them
            perms = self.game.symmetries[self.rng.integers(len(self.game.symmetries), size=len(obs))]
            obs = obs[np.arange(len(obs))[:, None], perms]
        pred = self.net(torch.from_numpy(obs))
        target = torch.from_numpy(targets)
        loss = F.huber_loss(pred, target) if self.a.loss == "huber" else F.mse_loss(pred, target)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.loss_sum += float(loss.detach()) * len(targets)
        self.loss_count += len(targets)

    def take_loss(self) -> float:
        """Mean TD loss since the previous call (nan when there was no update)."""
        mean = self.loss_sum / self.loss_count if self.loss_count else float("nan")
        self.loss_sum, self.loss_count = 0.0, 0
        return mean

    # ---- checkpoint state
    def state_dict(self) -> dict:
        g = self.games
        return {
            "weights": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "frozen": None if self.frozen is None else self.frozen.state_dict(),
            "frozen_taken_at": self.frozen_taken_at,
            "frozen_refreshes": self.frozen_refreshes,
            "episodes": self.episodes,
            "steps": self.steps,
            "envs": {**{name: torch.from_numpy(getattr(g, name).copy()) for name in GAME_ARRAYS},
                     **{name: torch.from_numpy(getattr(self, name).copy()) for name in TRAINER_ARRAYS}},
            "rng": {"numpy": self.rng.bit_generator.state, "torch": torch.get_rng_state(),
                    "python": random.getstate()},
        }

    def load_state_dict(self, s: dict) -> None:
        self.net.load_state_dict(s["weights"])
        self.optimizer.load_state_dict(s["optimizer"])
        if s["frozen"] is not None:
            self.frozen = copy.deepcopy(self.net).requires_grad_(False)
            self.frozen.load_state_dict(s["frozen"])
        else:
            self.frozen = None
        self.frozen_taken_at, self.frozen_refreshes = s["frozen_taken_at"], s["frozen_refreshes"]
        self.episodes, self.steps = s["episodes"], s["steps"]
        g, envs = self.games, s["envs"]
        if envs["board"].shape != g.board.shape:
            raise CheckpointError(f"checkpoint has {envs['board'].shape[0]} training games, config has {len(g)}")
        for name in GAME_ARRAYS:
            getattr(g, name)[:] = envs[name].numpy()
        for name in TRAINER_ARRAYS:
            getattr(self, name)[:] = envs[name].numpy()
        self.rng.bit_generator.state = s["rng"]["numpy"]
        torch.set_rng_state(s["rng"]["torch"])
        random.setstate(s["rng"]["python"])


# ------------------------------------------------------------------------------------ training loop
def check(cfg: DictConfig, game: Game) -> None:
    """Refuse agent settings the training cannot use, before any work (``ttt.config.check_train_config``)."""
    a = Config(**OmegaConf.to_container(cfg.agent, resolve=True))
    check_config(a)
    check_ranges("agent.", a, {"lr": POSITIVE, "gamma": UNIT, "epsilon": UNIT, "epsilon_final": UNIT,
                               "frozen_epsilon": UNIT, "epsilon_decay_episodes": NON_NEGATIVE,
                               "switch_episode": NON_NEGATIVE, "refresh_every": NON_NEGATIVE,
                               "final_eval_games": AT_LEAST_ONE})


def train(cfg: DictConfig, run: Run) -> dict:
    """Train with the curriculum on the schedule of ``run`` (evaluations, checkpoints, log lines)."""
    a = cfg.agent
    rng = np.random.default_rng(int(cfg.seed))
    trainer = Trainer(run.game, cfg.network, a, int(cfg.num_envs), rng)
    if run.resumed is not None:
        trainer.load_state_dict(run.resumed["trainer"])
    path = run.checkpoint_path()
    network = OmegaConf.to_container(cfg.network, resolve=True)

    def player() -> DQNPlayer:
        return DQNPlayer(run.game, trainer.net, network, bool(a.exact_wins))

    def save(done: int) -> None:
        save_checkpoint(path, {"kind": "dqn", "game": run.game.name, "config": run.config_dict(),
                               "network": network, "exact_wins": bool(a.exact_wins),
                               "weights": trainer.net.state_dict(), "episodes": trainer.episodes,
                               "trainer": trainer.state_dict()})

    def log(ep: int) -> str:
        run.log("train/td_loss", trainer.take_loss(), ep)
        run.log("train/epsilon", epsilon_at(a, ep), ep)
        run.log("train/opponent", OPPONENT_PHASES[trainer.phase()], ep)
        run.log("train/benchmark_share", float((trainer.kind == OPPONENT_PHASES["benchmark"]).mean()), ep)
        run.log("train/frozen_refreshes", trainer.frozen_refreshes, ep)
        return f"opponent {trainer.phase_label()}"

    total = int(cfg.episodes)
    run.start(trainer.episodes)
    while trainer.episodes < total:
        trainer.step()
        run.tick(trainer.episodes, player, save, log)
    results = run.finish(player, trainer.episodes, save, games=int(a.final_eval_games))
    return run.write_final(results, extra={"command": run_command(), "seed": int(cfg.seed), "network": network})


# -------------------------------------------------------------------------------- the trained player
class DQNPlayer(BatchPlayer):
    """Greedy play by the afterstate values: one forward pass over every legal afterstate."""

    name = "dqn"

    def __init__(self, game: Game, net: ValueNet, network: dict | None = None, exact_wins: bool = True) -> None:
        super().__init__(game)
        self.net = net
        self.network = network
        self.exact_wins = exact_wins
        self._learner: Trainer | None = None

    def act_batch(self, games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        actions = np.full(len(games), -1, dtype=np.int64)
        live = np.flatnonzero(~games.done)
        if len(live):
            actions[live] = afterstate_values(self.net, games, live, self.exact_wins).numpy().argmax(1)
        return actions

    def learn_from_game(self, states: list[State]) -> bool:
        """Replay a finished game through the TD(0) rule, learning from both seats (Adam 1e-3)."""
        if self._learner is None:
            cfg = Config(opponent="self_play", opponent_after="self_play", exact_wins=self.exact_wins)
            self._learner = Trainer(self.game, None, cfg, 1, np.random.default_rng(0), net=self.net)
        for state in states[1:]:
            self._learner.step(np.array([state.last_action]))
        return True

    def action_values(self, state: State) -> dict[int, float]:
        games = BatchedGames.from_states([state])
        values = afterstate_values(self.net, games, np.array([0]), self.exact_wins)[0]
        return {a: float(values[a]) for a in state.legal_actions()}

    def save(self, path) -> None:
        save_checkpoint(path, {"kind": "dqn", "game": self.game.name, "network": self.network,
                               "exact_wins": self.exact_wins, "weights": self.net.state_dict()})


def player_from_checkpoint(payload: dict) -> DQNPlayer:
    """The greedy player of a ``dqn`` checkpoint."""
    game = make_game(payload["game"])
    net = build_value_net(OmegaConf.create(payload["network"]), game)
    net.load_state_dict(payload["weights"])
    net.eval()
    return DQNPlayer(game, net, payload["network"], bool(payload.get("exact_wins", True)))


# ------------------------------------------------------------------------------------- throughput
def training_throughput(num_envs: int, seconds: float, board: str = "4x4x4", seed: int = 0) -> float:
    """Training episodes per second of the structured deep network against random (``ttt.perf``)."""
    network = OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": False})
    agent = Config(opponent="random", opponent_after="random")
    torch.manual_seed(seed)
    trainer = Trainer(make_game(board), network, agent, num_envs, np.random.default_rng(seed))
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        trainer.step()
    return trainer.episodes / (time.perf_counter() - t0)
