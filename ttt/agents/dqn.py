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
import sys
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf

from ttt.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from ttt.games import BatchedGames, Game, State, make_game, random_legal_actions
from ttt.games.threats import MoveTactics, completing_moves, move_tactics
from ttt.nets.structured import ValueNet, build_value_net
from ttt.players import BatchPlayer, BenchmarkPlayer
from ttt.training import OPPONENT_PHASES, Run


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
    exact_losses: bool = False  # an afterstate that lets the opponent win at once scores -1 in move selection
    rule_labels: bool = False  # also train every legal afterstate the rules value exactly (win, loss, fork)
    frozen_pool: int = 1  # past frozen copies kept; each frozen-opponent game draws one of them
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
    if a.frozen_pool < 1:
        raise ValueError(f"agent.frozen_pool={a.frozen_pool}: must be >= 1")


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
def afterstate_values(net: ValueNet, games: BatchedGames, rows: np.ndarray, exact_wins: bool = True,
                      exact_losses: bool = False, tactics: MoveTactics | None = None) -> torch.Tensor:
    """(len(rows), cells) values of every legal afterstate of the games ``rows``, -inf where illegal.

    One forward pass, no autograd; the board is seen from the player to move, whose piece is +1.
    With ``exact_wins`` a move that completes a line scores its reward, +1: a terminal afterstate's
    value is the reward, not an estimate (a tanh output only approaches 1, and a position one move
    from a win is worth gamma, so the estimate alone ranks them too close). With ``exact_losses`` a
    move after which the opponent can complete a line at once scores -1, its value when the opponent
    takes the win. ``tactics`` (``move_tactics`` of these rows) is computed when not given.
    """
    board, to_play, legal = games.board[rows], games.to_play[rows], games.legal_mask()[rows]
    boards = torch.from_numpy((board * to_play[:, None]).astype(np.float32))
    values = net.afterstate_values(boards, torch.from_numpy(legal))
    if exact_losses:
        t = move_tactics(board, to_play, legal, games.game) if tactics is None else tactics
        values[torch.from_numpy(t.loss)] = -1.0
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


# ------------------------------------------------------------------------- TD(0) targets of one ply
@dataclass
class Targets:
    """Training examples of one ply: afterstates (mover's view), their targets and the games they came from."""

    obs: np.ndarray  # (N, cells) float32
    targets: np.ndarray  # (N,) float32
    rows: np.ndarray  # (N,) game index

    @staticmethod
    def concat(parts: list[Targets]) -> Targets:
        return Targets(np.concatenate([p.obs for p in parts]).astype(np.float32, copy=False),
                       np.concatenate([p.targets for p in parts]).astype(np.float32),
                       np.concatenate([p.rows for p in parts]).astype(np.int64))


def td0_targets(rows: np.ndarray, prev: np.ndarray, has_prev: np.ndarray, after: np.ndarray,
                new_value: np.ndarray, terminal: np.ndarray, reward: np.ndarray, gamma: float) -> Targets:
    """The TD(0) targets of the movers' seats after one move in the games ``rows``.

    Per mover: its previous afterstate ``prev`` (when ``has_prev``) moves toward ``gamma * V(after)``,
    or ``gamma * reward`` when the new afterstate ``after`` is terminal; a terminal ``after`` itself moves
    toward ``reward`` (+1 win, 0 draw). ``new_value`` is V(after) (a constant: no gradient).
    """
    boot = np.where(terminal, reward, new_value)
    return Targets.concat([
        Targets(prev[has_prev], gamma * boot[has_prev], rows[has_prev]),
        Targets(after[terminal], reward[terminal], rows[terminal]),
    ])


def final_targets(rows: np.ndarray, prev: np.ndarray, has_prev: np.ndarray, reward: np.ndarray) -> Targets:
    """When a game ends on the opponent's move, the waiting seat's last afterstate moves toward its
    reward, ``-reward`` of the mover (-1 loss, 0 draw), with no bootstrap."""
    return Targets(prev[has_prev], -reward[has_prev], rows[has_prev])


def rule_targets(rows: np.ndarray, views: np.ndarray, tactics: MoveTactics, gamma: float) -> Targets:
    """Exact values the rules give for afterstates of the boards ``views`` (mover's view, +1 own):
    a winning move's afterstate is worth +1, a move that lets the opponent win at once -1, and a fork
    (two winning cells the opponent cannot both block) ``gamma``, a win on the mover's next move."""
    value = np.zeros(tactics.win.shape, dtype=np.float32)
    value[tactics.fork] = gamma
    value[tactics.loss] = -1.0
    value[tactics.win] = 1.0
    e, a = np.nonzero(tactics.win | tactics.loss | tactics.fork)
    obs = views[e].astype(np.float32)
    obs[np.arange(len(e)), a] = 1.0
    return Targets(obs, value[e, a], rows[e])


# -------------------------------------------------------------------------- a batch of training games
# the per-game arrays a checkpoint holds: the BatchedGames state, then the trainer's own
GAME_ARRAYS = ("board", "to_play", "done", "winner", "num_moves", "last_action")
TRAINER_ARRAYS = ("agent_seat", "kind", "pool_index", "prev", "has_prev")


class Trainer:
    """``num_envs`` training games, the learning network, its optimiser and the opponents.

    ``step()`` plays one ply in every game and makes one TD(0) update; it returns that ply's training
    examples. Everything it needs to continue is in ``state_dict()``.
    """

    def __init__(self, game: Game, network_cfg, agent_cfg, num_envs: int, rng: np.random.Generator,
                 net: ValueNet | None = None) -> None:
        # a plain dataclass: the loop reads settings every ply, and DictConfig access is slow
        agent_cfg = agent_cfg if isinstance(agent_cfg, Config) else Config(**OmegaConf.to_container(agent_cfg))
        check_config(agent_cfg)
        self.game, self.a, self.rng = game, agent_cfg, rng
        self.net = build_value_net(network_cfg, game) if net is None else net
        self.optimizer = make_optimizer(agent_cfg, self.net)
        self.pool: list[ValueNet] = []  # frozen copies, oldest first
        self.frozen_taken_at = -1
        self.frozen_refreshes = 0
        self.benchmark = BenchmarkPlayer(game)
        self.games = BatchedGames(game, num_envs)
        envs = np.arange(num_envs)
        self.agent_seat = np.where(envs % 2 == 0, 1, -1).astype(np.int8)  # seats alternate per game
        self.kind = np.zeros(num_envs, dtype=np.int8)  # each game's opponent (OPPONENT_PHASES code)
        self.pool_index = np.zeros(num_envs, dtype=np.int64)  # the frozen copy each game plays
        self.prev = np.zeros((num_envs, 2, game.num_cells), dtype=np.float32)  # last afterstate per seat
        self.has_prev = np.zeros((num_envs, 2), dtype=bool)
        self.episodes = 0
        self.steps = 0
        self.loss_sum, self.loss_count = 0.0, 0
        self._refresh_frozen()
        for e in envs:
            self._new_game(e)

    @property
    def frozen(self) -> ValueNet | None:
        """The newest frozen copy (None before the curriculum takes one)."""
        return self.pool[-1] if self.pool else None

    # ---- curriculum
    def phase(self) -> str:
        """The opponent of games that start now."""
        return self.a.opponent if self.episodes < self.a.switch_episode else self.a.opponent_after

    def phase_label(self) -> str:
        """The opponents of games that start now, for people: e.g. ``80% benchmark / 20% frozen``."""
        name, share = self.phase(), self.a.benchmark_fraction
        if name == "frozen" and self.a.frozen_pool > 1:
            name = f"frozen (pool of {len(self.pool)})"
        if self.episodes < self.a.switch_episode or share <= 0:
            return name
        return "benchmark" if share >= 1 else f"{share:.0%} benchmark / {1 - share:.0%} {name}"

    def _new_game(self, e: int) -> None:
        """Draw the opponent of the game starting in env ``e`` (and its frozen copy)."""
        name = self.phase()
        if self.episodes >= self.a.switch_episode and self.a.benchmark_fraction > 0:
            if self.rng.random() < self.a.benchmark_fraction:
                name = "benchmark"
        self.kind[e] = OPPONENT_PHASES[name]
        if name == "frozen" and len(self.pool) > 1:
            self.pool_index[e] = self.rng.integers(len(self.pool))
        else:
            self.pool_index[e] = max(len(self.pool) - 1, 0)

    def _refresh_frozen(self) -> None:
        """Take a frozen copy of the weights when the curriculum switches to it, and every refresh_every;
        the pool keeps the newest ``frozen_pool`` copies."""
        if self.phase() != "frozen" and self.a.opponent != "frozen":
            return
        due = not self.pool or (self.a.refresh_every > 0
                                and self.episodes - self.frozen_taken_at >= self.a.refresh_every)
        if due:
            self.pool.append(copy.deepcopy(self.net).requires_grad_(False))
            if len(self.pool) > self.a.frozen_pool:
                self.pool.pop(0)
                self.pool_index -= 1  # games in progress keep their copy (or the oldest one left)
                np.maximum(self.pool_index, 0, out=self.pool_index)
            self.frozen_taken_at = self.episodes
            self.frozen_refreshes += 1

    def learner_mask(self) -> np.ndarray:
        """Games whose player to move learns: the agent's seat, or both seats in self-play games."""
        return (self.games.to_play == self.agent_seat) | (self.kind == OPPONENT_PHASES["self_play"])

    def _tactics(self, rows: np.ndarray) -> MoveTactics | None:
        if not (self.a.exact_losses or self.a.rule_labels) or not len(rows):
            return None
        g = self.games
        return move_tactics(g.board[rows], g.to_play[rows], g.legal_mask()[rows], self.game)

    # ---- one ply in every game
    def step(self, actions: np.ndarray | None = None) -> Targets:
        """Play one ply everywhere and learn from it; ``actions`` (one per game) scripts every move.

        Returns the ply's training examples (before any symmetry augmentation)."""
        g, rng, a = self.games, self.rng, self.a
        mover = g.to_play.copy()
        lrn = np.flatnonzero(self.learner_mask())
        chosen = np.full(len(g), -1, dtype=np.int64)
        tactics = self._tactics(lrn)
        values = afterstate_values(self.net, g, lrn, a.exact_wins, a.exact_losses, tactics) if len(lrn) else None
        if actions is not None:
            chosen[:] = actions
        else:
            if len(lrn):
                chosen[lrn] = epsilon_greedy(values, epsilon_at(a, self.episodes), rng)
            self._opponent_moves(np.flatnonzero(~self.learner_mask()), chosen)
        new_value = values[np.arange(len(lrn)), chosen[lrn]].numpy() if len(lrn) else np.zeros(0, np.float32)
        # the learners' boards before the move and their new afterstates, from the mover's view
        views = (g.board[lrn] * mover[lrn, None]).astype(np.float32)
        after = views.copy()
        after[np.arange(len(lrn)), chosen[lrn]] = 1.0

        ended = g.step(chosen)
        reward = (g.winner.astype(np.int64) * mover).astype(np.float32)  # from the mover's view, 0 if not over
        seat = (mover[lrn] < 0).astype(np.int64)
        other = (mover[ended] > 0).astype(np.int64)  # seat index of the player who did not move
        parts = [
            td0_targets(lrn, self.prev[lrn, seat], self.has_prev[lrn, seat], after, new_value,
                        g.done[lrn], reward[lrn], float(a.gamma)),
            final_targets(ended, self.prev[ended, other], self.has_prev[ended, other], reward[ended]),
        ]
        if a.rule_labels and tactics is not None:
            parts.append(rule_targets(lrn, views, tactics, float(a.gamma)))
        batch = Targets.concat(parts)
        self._update(batch.obs, batch.targets)

        # remember the learners' afterstates; start new games where games ended
        self.prev[lrn, seat] = after
        self.has_prev[lrn, seat] = True
        self.steps += 1
        if len(ended):
            self.has_prev[ended] = False
            self.agent_seat[ended] *= -1
            g.reset(g.done)
            for e in ended:
                self.episodes += 1
                self._new_game(e)
            self._refresh_frozen()
        return batch

    def _opponent_moves(self, rows: np.ndarray, chosen: np.ndarray) -> None:
        g, rng, a = self.games, self.rng, self.a
        kinds = self.kind[rows]
        pick = rows[kinds == OPPONENT_PHASES["random"]]
        if len(pick):
            chosen[pick] = random_legal_actions(g.legal_mask()[pick], rng)
        pick = rows[kinds == OPPONENT_PHASES["benchmark"]]
        if len(pick):
            chosen[pick] = self.benchmark.act_batch(g, rng)[pick]
        frozen = rows[kinds == OPPONENT_PHASES["frozen"]]
        for i in np.unique(self.pool_index[frozen]):
            pick = frozen[self.pool_index[frozen] == i]
            # a frozen copy picks its own best move: the argmax of its afterstate values, same rules
            values = afterstate_values(self.pool[i], g, pick, a.exact_wins, a.exact_losses, self._tactics(pick))
            chosen[pick] = epsilon_greedy(values, a.frozen_epsilon, rng)

    def _update(self, obs: np.ndarray, targets: np.ndarray) -> None:
        """One optimiser step on the TD targets of this ply (targets are constants: detached)."""
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
            "pool": [f.state_dict() for f in self.pool],
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
        self.pool = []
        for weights in s["pool"]:
            frozen = copy.deepcopy(self.net).requires_grad_(False)
            frozen.load_state_dict(weights)
            self.pool.append(frozen)
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
def train(cfg: DictConfig, run: Run) -> dict:
    """Train with the curriculum, evaluating and checkpointing every ``eval_every`` episodes."""
    a = cfg.agent
    rng = np.random.default_rng(int(cfg.seed))
    trainer = Trainer(run.game, cfg.network, a, int(cfg.num_envs), rng)
    path = run.checkpoint_path()
    if cfg.resume and path.is_file():
        payload = load_checkpoint(path, kind="dqn", game=run.game.name)
        trainer.load_state_dict(payload["trainer"])
        print(f"resumed {path} at episode {trainer.episodes}", file=sys.stderr, flush=True)
    total, every = int(cfg.episodes), int(cfg.eval_every)
    log_every = max(1, every // 4) if every > 0 else max(1, total // 20)
    next_eval = (trainer.episodes // every + 1) * every if every > 0 else total + 1
    next_log = (trainer.episodes // log_every + 1) * log_every
    run.log_rate(trainer.episodes)
    network = OmegaConf.to_container(cfg.network, resolve=True)

    def player() -> DQNPlayer:
        return DQNPlayer(run.game, trainer.net, network, bool(a.exact_wins), bool(a.exact_losses))

    def save() -> None:
        save_checkpoint(path, {"kind": "dqn", "game": run.game.name, "config": run.config_dict(),
                               "network": network, "exact_wins": bool(a.exact_wins),
                               "exact_losses": bool(a.exact_losses),
                               "weights": trainer.net.state_dict(), "episodes": trainer.episodes,
                               "trainer": trainer.state_dict()})

    while trainer.episodes < total:
        trainer.step()
        ep = trainer.episodes
        if ep >= next_log:
            next_log = (ep // log_every + 1) * log_every
            run.log("train/td_loss", trainer.take_loss(), ep)
            run.log("train/epsilon", epsilon_at(a, ep), ep)
            run.log("train/opponent", OPPONENT_PHASES[trainer.phase()], ep)
            run.log("train/benchmark_share", float((trainer.kind == OPPONENT_PHASES["benchmark"]).mean()), ep)
            run.log("train/frozen_refreshes", trainer.frozen_refreshes, ep)
            rate = run.log_rate(ep)
            run.progress(ep, f"{rate:,.0f} episodes/s, opponent {trainer.phase_label()}")
        if ep >= next_eval and ep < total:
            next_eval = (ep // every + 1) * every
            run.evaluate(player(), ep)
            run.progress(ep, f"opponent {trainer.phase_label()}", force=True)
            save()
    save()
    results = run.evaluate(player(), trainer.episodes, games=int(a.final_eval_games))
    run.progress(trainer.episodes, "final evaluation", force=True)
    return run.write_final(results, extra={"command": _command(), "seed": int(cfg.seed), "network": network})


def _command() -> str:
    """The command line that started this run, when Hydra started it."""
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = HydraConfig.get().overrides.task
        return " ".join(["python -m ttt.train", *overrides])
    except Exception:  # called as a plain function (tests)
        return "ttt.train.train(cfg)"


# -------------------------------------------------------------------------------- the trained player
class DQNPlayer(BatchPlayer):
    """Greedy play by the afterstate values: one forward pass over every legal afterstate.

    ``exact_wins`` / ``exact_losses``: the rules' exact values of winning moves (+1) and of moves that
    let the opponent win at once (-1) replace the network's in move selection; both off, the network
    plays alone.
    """

    name = "dqn"

    def __init__(self, game: Game, net: ValueNet, network: dict | None = None, exact_wins: bool = True,
                 exact_losses: bool = False) -> None:
        super().__init__(game)
        self.net = net
        self.network = network
        self.exact_wins = exact_wins
        self.exact_losses = exact_losses
        self._learner: Trainer | None = None

    def values(self, games: BatchedGames, rows: np.ndarray) -> torch.Tensor:
        """Afterstate values of the games ``rows`` as this player ranks them (its rules applied)."""
        return afterstate_values(self.net, games, rows, self.exact_wins, self.exact_losses)

    def act_batch(self, games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        actions = np.full(len(games), -1, dtype=np.int64)
        live = np.flatnonzero(~games.done)
        if len(live):
            actions[live] = self.values(games, live).numpy().argmax(1)
        return actions

    def learn_from_game(self, states: list[State]) -> bool:
        """Replay a finished game through the TD(0) rule, learning from both seats (Adam 1e-3)."""
        if self._learner is None:
            cfg = Config(opponent="self_play", opponent_after="self_play", exact_wins=self.exact_wins,
                         exact_losses=self.exact_losses)
            self._learner = Trainer(self.game, None, cfg, 1, np.random.default_rng(0), net=self.net)
        for state in states[1:]:
            self._learner.step(np.array([state.last_action]))
        return True

    def action_values(self, state: State) -> dict[int, float]:
        games = BatchedGames.from_states([state])
        values = self.values(games, np.array([0]))[0]
        return {a: float(values[a]) for a in state.legal_actions()}

    def save(self, path) -> None:
        save_checkpoint(path, {"kind": "dqn", "game": self.game.name, "network": self.network,
                               "exact_wins": self.exact_wins, "exact_losses": self.exact_losses,
                               "weights": self.net.state_dict()})


def player_from_checkpoint(payload: dict) -> DQNPlayer:
    """The greedy player of a ``dqn`` checkpoint."""
    game = make_game(payload["game"])
    net = build_value_net(OmegaConf.create(payload["network"]), game)
    net.load_state_dict(payload["weights"])
    net.eval()
    return DQNPlayer(game, net, payload["network"], bool(payload.get("exact_wins", True)),
                     bool(payload.get("exact_losses", False)))


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
