"""AlphaZero: PUCT search guided by a policy-value network, trained on its own self-play games.

Reads top to bottom: settings (``Config``), network, search, self-play, training loop, player.

Search: the tree search of ``ttt.players.tree`` with the ``PUCT`` rule and the network as the leaf
evaluator (``NetworkEvaluator``), run on the array trees of ``ttt.players.array_tree`` (the same
search over arrays, bit for bit; the node tree's ``run_search`` stays as its reference and for
``action_values``). Every simulation walks down from the root choosing the move with the largest

    U(s, a) = Q(s, a) + c_puct * P(s, a) * sqrt(N_s) / (1 + N(s, a)),   N_s = sum_b N(s, b)

(``sqrt(max(N_s, 1))``, so a node seen for the first time follows its prior; ``Q`` of an unvisited
move is 0). The leaf is scored by the network, ``v(s)`` from the view of its player to move, or by
its true result when the game is over there; the value is added to every move on the path with the
sign of the player who chose it. In self-play Dirichlet noise is mixed into the root prior,
``P = (1 - epsilon) P + epsilon Dir(alpha)``. All live games of a batch search in lock step, so
each simulation costs one network call for the whole batch. With ``decisive`` a new node that the
next move decides (its mover can complete a line: won; else the opponent can complete lines at two
cells: lost) takes that result without the network, as ``mcts``'s decisive check has it.

Self-play. For the first ``temperature_moves`` moves of a game the move is drawn in proportion to
the root visit counts (temperature 1), later it is the most visited move (temperature 0). Each
position gives an example (board seen from the mover, pi, z): ``pi`` is the visit-count policy at
that temperature (the visit distribution, or one-hot on the chosen move) and ``z`` the final result
from the mover's view. Training samples from a replay buffer of recent examples; with ``augment``
each sampled example is mapped by a random symmetry of the board, board and policy alike
(``b'[sym[g, i]] = b[i]``, ``pi'[sym[g, i]] = pi[i]``).

Network (``ttt.nets.policy_value``). A trunk from the ``network`` config group (``structured``: the
line-detector layer of ``ttt.nets.structured``, or ``mlp``), Tanh layers of sizes ``network.hidden``, then a policy head
(one logit per cell; illegal cells masked; with ``policy_head="lines"`` the line detectors also reach
their own cells' logits) and a value head (Tanh, in [-1, 1]). Loss: cross-entropy
of the policy against pi plus the squared error of the value against z.

Devices. With ``device=cuda`` the network lives on the GPU: each lock-step simulation sends its
leaves there as one batch and reads back their priors and values, and every training step runs there.
The trees and the self-play games stay on the host (a search is branchy, per-node work).

TensorBoard tags of this learner (besides ``eval/`` and ``train/episodes_per_sec``):
``train/policy_loss`` and ``train/value_loss`` (means over the updates since the last log),
``train/examples`` (examples in the replay buffer) and ``train/updates`` (gradient steps so far).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from ttt.checkpoint import save_checkpoint
from ttt.config import (
    AT_LEAST_ONE,
    NON_NEGATIVE,
    POSITIVE,
    UNIT,
    ConfigError,
    agent_settings,
    check_choice,
    check_ranges,
)
from ttt.device import module_device, torch_device
from ttt.games import BatchedGames, Game, State, make_game
from ttt.games.exact import NO_RULES, Rules, exact_values
from ttt.nets.policy_value import POLICY_HEADS, PolicyValueNet, build_policy_value_net
from ttt.players.array_tree import ArrayTrees
from ttt.players.base import Player
from ttt.players.tree import PUCT, Node, expand, simulate

TREE_NODES = 1 << 16  # the most nodes of the trees searched at once by the player (about 2 KB each on Qubic)
USES_DEVICE = True  # the network and its training steps run on the run's device (ttt.train)


@dataclass
class Config:
    """Settings of ``configs/agent/alphazero.yaml`` (the one home of each default). An episode is one
    self-play game; ``num_envs`` games are played in parallel."""

    name: str = "alphazero"
    simulations: int = 50  # PUCT simulations per self-play move
    eval_simulations: int = 50  # PUCT simulations per move of the trained player (evaluation, play)
    c_puct: float = 1.5
    dirichlet_alpha: float = 0.3  # about 10 / (typical number of legal moves)
    dirichlet_epsilon: float = 0.25
    temperature_moves: int = 4  # moves per game drawn from the visit counts; then argmax of visits
    batch_size: int = 128  # examples per gradient step
    sample_reuse: float = 4.0  # gradient steps are chosen so each new example is drawn this often on average
    buffer_size: int = 20000  # most recent examples kept
    lr: float = 1e-3  # Adam
    weight_decay: float = 1e-4
    augment: bool = True  # random board symmetry per sampled example
    policy_target: str = "played"  # "played": pi at the move's temperature; "visits": visit distribution
    policy_head: str = "dense"  # "lines": the line detectors also reach their cells' logits (PolicyValueNet)
    decisive: bool = False  # the search takes the result of a new node that the next move decides (won: the mover
    # completes a line; lost: the opponent threatens two cells), unscored: mcts's decisive check
    play_threats: int | None = None  # the trained player's rules at the root (evaluation, play; not self-play):
    # None, the most visited move; D >= 0, the rules' exact values first (AlphaZeroPlayer.rules)

    def __post_init__(self) -> None:
        """Fail early, naming the key, on values the schema's types cannot rule out."""
        check_choice("agent.", self, "policy_target", ("played", "visits"))
        check_choice("agent.", self, "policy_head", POLICY_HEADS)
        if self.play_threats is not None and (isinstance(self.play_threats, bool) or self.play_threats < 0):
            raise ConfigError(f"agent.play_threats={self.play_threats}: null (no rules) or a chain depth >= 0")
        check_ranges("agent.", self, {"simulations": AT_LEAST_ONE, "eval_simulations": AT_LEAST_ONE,
                                      "c_puct": POSITIVE, "dirichlet_alpha": POSITIVE, "dirichlet_epsilon": UNIT,
                                      "temperature_moves": NON_NEGATIVE, "batch_size": AT_LEAST_ONE,
                                      "sample_reuse": POSITIVE, "buffer_size": AT_LEAST_ONE, "lr": POSITIVE,
                                      "weight_decay": NON_NEGATIVE})


# ---------------------------------------------------------------------------- network
def masked_log_softmax(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """log-probabilities over the legal cells; illegal cells get a huge negative log-probability."""
    return torch.log_softmax(logits.masked_fill(~legal, -1e9), dim=-1)


# ---------------------------------------------------------------------------- search
class NetworkEvaluator:
    """The leaf evaluator of the search: one network call for all the leaves gives their priors
    (illegal cells masked) and their values, returned on the first player's scale (``v(s)`` is from
    the mover's view, so it is multiplied by ``to_play``). ``arrays`` serves the array trees
    (``ttt.players.array_tree``), a call the node tree (``ttt.players.tree``); both run the same code."""

    def __init__(self, net: PolicyValueNet) -> None:
        self.net = net

    @torch.no_grad()
    def arrays(self, boards: np.ndarray, to_play: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, cells) float64 move probabilities and (n,) float64 values of n positions."""
        obs = torch.as_tensor(np.asarray(boards, dtype=np.float32))
        signs = torch.as_tensor(np.asarray(to_play, dtype=np.float32))
        obs = obs * signs[:, None]
        device = module_device(self.net)  # one batch to the network's device and back
        logits, v = self.net(obs.to(device))
        mask = torch.from_numpy(np.ascontiguousarray(legal)).to(device)
        probs = torch.softmax(logits.masked_fill(~mask, -1e9), dim=-1).cpu().numpy().astype(np.float64)
        return probs, (v.cpu() * signs).numpy().astype(np.float64)

    def __call__(self, nodes: list[Node], rng: np.random.Generator | None = None) -> np.ndarray:
        if not nodes:
            return np.zeros(0)
        boards = np.array([n.state.board for n in nodes], dtype=np.int8)
        legal = np.zeros(boards.shape, dtype=bool)  # one scatter for all the leaves, not a tensor per leaf
        rows = np.repeat(np.arange(len(nodes)), [len(n.moves) for n in nodes])
        legal[rows, np.concatenate([n.actions for n in nodes])] = True
        probs, values = self.arrays(boards, np.array([n.to_play for n in nodes]), legal)
        for i, n in enumerate(nodes):
            n.prior = probs[i, n.actions]
        return values


def run_search(net: PolicyValueNet, roots: list[Node], simulations: int, c_puct: float,
               rng: np.random.Generator | None = None, dirichlet_alpha: float = 0.3,
               dirichlet_epsilon: float = 0.0) -> None:
    """``simulations`` PUCT simulations from each root, in lock step (one network call per step).

    With ``dirichlet_epsilon > 0`` (and ``rng``) Dirichlet noise is mixed into each root prior.
    """
    evaluate = NetworkEvaluator(net)
    expand([r for r in roots if not r.expanded], evaluate)
    if dirichlet_epsilon > 0:
        for r in roots:
            if r.value is None:
                noise = rng.dirichlet(np.full(len(r.actions), dirichlet_alpha))
                r.prior = (1 - dirichlet_epsilon) * r.prior + dirichlet_epsilon * noise
    simulate(roots, simulations, PUCT(c_puct), evaluate, rng)


def search_arrays(net: PolicyValueNet, trees: ArrayTrees, c_puct: float, rng: np.random.Generator | None = None,
                  dirichlet_alpha: float = 0.3, dirichlet_epsilon: float = 0.0) -> None:
    """``run_search`` on array trees: the roots expanded (one network call), root noise with
    ``dirichlet_epsilon > 0``, then the trees' simulations in lock step. The same search: with the same
    network and generator the visit counts are ``run_search``'s (tests)."""
    evaluate = NetworkEvaluator(net).arrays
    rows = trees.expand_roots(evaluate)
    if dirichlet_epsilon > 0:
        trees.add_root_noise(rows, rng, dirichlet_alpha, dirichlet_epsilon)
    trees.simulate(rows, c_puct, evaluate)


def visit_policy(visits: np.ndarray, legal: np.ndarray, temperature: float) -> np.ndarray:
    """pi over all cells from a root's visit counts (over all cells, ``legal`` its moves):
    visits^(1/T) normalised for T > 0; one-hot on the most visited move (the first in cell order) for T = 0."""
    pi = np.zeros(len(visits))
    if temperature > 0:
        w = visits[legal] ** (1.0 / temperature)
        pi[legal] = w / w.sum()
    else:
        pi[int(np.argmax(np.where(legal, visits, -1.0)))] = 1.0
    return pi


# ---------------------------------------------------------------------------- symmetry augmentation
def apply_symmetries(x: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """Map per-cell arrays by cell permutations: ``out[b, perms[b, i]] = x[b, i]``.

    ``x`` (B, cells) boards, policies or legal masks; ``perms`` (B, cells) rows of ``Game.symmetries``.
    """
    out = np.empty_like(x)
    np.put_along_axis(out, perms, x, axis=1)
    return out


# ---------------------------------------------------------------------------- self-play
def self_play(net: PolicyValueNet, game: Game, num_games: int, cfg: Config,
              rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]:
    """Play ``num_games`` self-play games in parallel. Returns the examples (board from the mover's
    view, legal mask, pi, z)."""
    games = BatchedGames(game, num_games)
    history: list[list[tuple[np.ndarray, np.ndarray, np.ndarray, int]]] = [[] for _ in range(num_games)]
    ply = 0
    while not games.done.all():
        live = np.flatnonzero(~games.done)
        trees = ArrayTrees(game, games.board[live], games.to_play[live], games.num_moves[live], cfg.simulations,
                           decisive=cfg.decisive)
        search_arrays(net, trees, cfg.c_puct, rng, cfg.dirichlet_alpha, cfg.dirichlet_epsilon)
        temperature = 1.0 if ply < cfg.temperature_moves else 0.0
        actions = np.full(num_games, -1, dtype=np.int64)
        obs = games.observation()
        legal = games.legal_mask()
        visits = trees.root_visits()
        for j, i in enumerate(live):
            pi = visit_policy(visits[j], legal[i], temperature)
            actions[i] = rng.choice(game.num_cells, p=pi) if temperature > 0 else int(np.argmax(pi))
            target = visit_policy(visits[j], legal[i], 1.0) if cfg.policy_target == "visits" else pi
            history[i].append((obs[i], legal[i], target, int(games.to_play[i])))
        games.play(actions)
        ply += 1
    return [(o, m, pi, float(games.winner[g] * p)) for g, h in enumerate(history) for o, m, pi, p in h]


class ReplayBuffer:
    """The most recent ``capacity`` examples as arrays (a ring)."""

    def __init__(self, capacity: int, cells: int) -> None:
        self.obs = np.zeros((capacity, cells), dtype=np.float32)
        self.legal = np.zeros((capacity, cells), dtype=bool)
        self.pi = np.zeros((capacity, cells), dtype=np.float32)
        self.z = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self.pos = 0

    def add(self, examples) -> None:
        for o, m, pi, z in examples:
            self.obs[self.pos], self.legal[self.pos], self.pi[self.pos], self.z[self.pos] = o, m, pi, z
            self.pos = (self.pos + 1) % len(self.z)
            self.size = min(self.size + 1, len(self.z))

    def sample(self, n: int, rng: np.random.Generator, symmetries: np.ndarray | None):
        idx = rng.integers(self.size, size=n)
        obs, legal, pi = self.obs[idx], self.legal[idx], self.pi[idx]
        if symmetries is not None:  # one random symmetry per example, the same for board, mask and policy
            perms = symmetries[rng.integers(len(symmetries), size=n)]
            obs, legal, pi = (apply_symmetries(x, perms) for x in (obs, legal, pi))
        return (torch.as_tensor(obs), torch.as_tensor(legal), torch.as_tensor(pi), torch.as_tensor(self.z[idx]))

    def state_dict(self) -> dict:
        return {"obs": torch.as_tensor(self.obs[: self.size]), "legal": torch.as_tensor(self.legal[: self.size]),
                "pi": torch.as_tensor(self.pi[: self.size]), "z": torch.as_tensor(self.z[: self.size]),
                "pos": self.pos}

    def load_state_dict(self, d: dict) -> None:
        n = min(len(d["z"]), len(self.z))
        self.obs[:n], self.legal[:n], self.pi[:n], self.z[:n] = (
            d["obs"][:n].numpy(), d["legal"][:n].numpy(), d["pi"][:n].numpy(), d["z"][:n].numpy())
        self.size, self.pos = n, int(d["pos"]) % len(self.z)


def update(net: PolicyValueNet, opt: torch.optim.Optimizer, batch) -> tuple[float, float]:
    """One gradient step on (obs, legal, pi, z); returns (policy loss, value loss)."""
    device = module_device(net)
    obs, legal, pi, z = (x.to(device) for x in batch)
    logits, v = net(obs)
    policy_loss = -(pi * masked_log_softmax(logits, legal)).sum(-1).mean()
    value_loss = ((v - z) ** 2).mean()
    opt.zero_grad()
    (policy_loss + value_loss).backward()
    opt.step()
    return policy_loss.item(), value_loss.item()


# ---------------------------------------------------------------------------- training loop
def check(cfg, game: Game) -> None:
    """Refuse settings this learner cannot use, before any work (``ttt.harness.learners.check_learner``)."""
    acfg = agent_settings(cfg.agent, Config)
    if acfg.policy_head == "lines" and str(cfg.network.kind) != "structured":
        raise ConfigError(f"agent.policy_head=lines needs network.kind=structured (got {cfg.network.kind})")


def train(cfg, run) -> dict:
    """Self-play in batches of ``num_envs`` games, learning after each batch, on the schedule of
    ``run`` (evaluations, checkpoints, log lines)."""
    from omegaconf import OmegaConf

    acfg = agent_settings(cfg.agent, Config)
    game = run.game
    network = OmegaConf.to_container(cfg.network, resolve=True)
    net = build_policy_value_net(game, network, acfg.policy_head).to(torch_device(run.device))
    opt = torch.optim.Adam(net.parameters(), lr=acfg.lr, weight_decay=acfg.weight_decay)
    buffer = ReplayBuffer(acfg.buffer_size, game.num_cells)
    rng = np.random.default_rng(int(cfg.seed))
    symmetries = game.symmetries if acfg.augment else None
    episode, updates = 0, 0
    if run.resumed is not None:
        payload = run.resumed
        net.load_state_dict(payload["model"])
        opt.load_state_dict(payload["optimizer"])
        buffer.load_state_dict(payload["buffer"])
        rng.bit_generator.state = payload["rng"]
        torch.set_rng_state(payload["torch_rng"])
        episode, updates = int(payload["episode"]), int(payload["updates"])

    def checkpoint(done: int) -> None:
        save_checkpoint(run.checkpoint_path(), {
            **payload_of(net, game, acfg, network), "config": run.config_dict(), "optimizer": opt.state_dict(),
            "buffer": buffer.state_dict(), "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
            "episode": episode, "updates": updates})

    def player() -> AlphaZeroPlayer:
        return AlphaZeroPlayer(game, net, acfg.eval_simulations, acfg.c_puct, acfg, network)

    losses: list[tuple[float, float]] = []

    def log(done: int) -> str:
        run.log("train/examples", buffer.size, done)
        run.log("train/updates", updates, done)
        if not losses:
            return ""
        pl, vl = np.mean(losses, axis=0)
        run.log("train/policy_loss", pl, done)
        run.log("train/value_loss", vl, done)
        losses.clear()
        return f"policy loss {pl:.3f} value loss {vl:.3f}"

    total = int(cfg.episodes)
    run.start(episode, player)
    while episode < total:
        n = min(int(cfg.num_envs), total - episode)
        net.eval()
        examples = self_play(net, game, n, acfg, rng)
        buffer.add(examples)
        net.train()
        steps = math.ceil(len(examples) * acfg.sample_reuse / acfg.batch_size)
        for _ in range(steps):
            losses.append(update(net, opt, buffer.sample(acfg.batch_size, rng, symmetries)))
        updates += steps
        net.eval()
        episode += n
        run.tick(episode, player, checkpoint, log)
    net.eval()
    results = run.finish(player, episode, checkpoint)
    return run.write_final(results, {"updates": updates, "command": run.command(), "seed": int(cfg.seed)})


# ---------------------------------------------------------------------------- player
def payload_of(net: PolicyValueNet, game: Game, acfg: Config, network: dict) -> dict:
    """The part of a checkpoint a player needs: weights and the settings that built them."""
    from dataclasses import asdict

    return {"kind": "alphazero", "game": game.name, "model": net.state_dict(), "agent": asdict(acfg),
            "network": dict(network)}


class AlphaZeroPlayer(Player):
    """PUCT search with a trained network (no noise); plays the most visited move.

    With ``agent_cfg.play_threats`` = D (not None) the player has ``rules`` (``ttt.games.exact.Rules``: wins,
    losses, forks and chains of at most D forcing threats, as the dqn player's) at the root, as move
    selection by values has them: a move the rules value exactly above 0 (a win, a fork, a chain of
    threats) is played before any other, the larger value first; one below 0 (a loss, or a move after
    which the opponent has a fork or a chain) comes after every other; the rest in the order of their
    visits. ``without_rules()`` is the search alone."""

    name = "alphazero"

    def __init__(self, game: Game, net: PolicyValueNet, simulations: int = 50, c_puct: float = 1.5,
                 agent_cfg: Config | None = None, network: dict | None = None) -> None:
        super().__init__(game)
        self.net = net.eval()
        self.simulations = int(simulations)
        self.c_puct = float(c_puct)
        self.agent_cfg = agent_cfg or Config(simulations=self.simulations, eval_simulations=self.simulations,
                                             c_puct=self.c_puct)
        self.network = network  # the settings that built ``net`` (needed to save)
        self.play_threats = self.agent_cfg.play_threats

    @property
    def play_threats(self) -> int | None:
        """The rules at the root: None, none; D, wins, losses, forks and chains of at most D threats."""
        return self.agent_cfg.play_threats

    @play_threats.setter
    def play_threats(self, depth: int | None) -> None:
        self.agent_cfg = replace(self.agent_cfg, play_threats=depth)  # checked there, and saved with the player
        self.rules = NO_RULES if depth is None else Rules(wins=True, losses=True, forks=True, threats=int(depth))

    def without_rules(self) -> AlphaZeroPlayer:
        """The same network and search, the most visited move played: no rule at the root."""
        cfg = replace(self.agent_cfg, play_threats=None)
        return AlphaZeroPlayer(self.game, self.net, self.simulations, self.c_puct, cfg, self.network)

    def search(self, states: list[State]) -> ArrayTrees:
        """The trees of a search from each of ``states`` (of one board), searched in lock step."""
        trees = ArrayTrees.from_states(states, self.simulations, self.agent_cfg.decisive)
        search_arrays(self.net, trees, self.c_puct)
        return trees

    def act(self, state: State, rng: np.random.Generator | None = None) -> int:
        return int(self.act_batch(BatchedGames.from_states([state]), rng)[0])

    def act_batch(self, games: BatchedGames, rng: np.random.Generator | None = None) -> np.ndarray:
        actions = np.full(len(games), -1, dtype=np.int64)
        live = np.flatnonzero(~games.done)
        step = max(1, TREE_NODES // (self.simulations + 1))  # trees of at most TREE_NODES nodes at a time
        for at in range(0, len(live), step):
            rows = live[at:at + step]
            trees = self.search([games.state(int(i)) for i in rows])
            if self.rules == NO_RULES:
                actions[rows] = trees.most_visited()
                continue
            visits = trees.root_visits()
            value, known = exact_values(games.board[rows], games.to_play[rows], trees.legal[:, 0], self.game,
                                        self.rules)
            # the rules' values beyond +-2, the visits in [0, 1) between them
            order = np.where(known, value + 2 * np.sign(value), visits / (visits.max(1, keepdims=True) + 1.0))
            actions[rows] = np.where(trees.legal[:, 0], order, -np.inf).argmax(1)
        return actions

    def action_values(self, state: State) -> dict[int, float]:
        """Q of each legal move from the mover's view after a search; moves the search never
        tried get the network's value of the position they lead to (negated: the opponent moves there).
        With rules, the rules' exact values where they give one."""
        root = Node(state)  # the node tree: it keeps each child's position for the moves never tried
        run_search(self.net, [root], self.simulations, self.c_puct)
        q = root.q()
        unvisited = [i for i in range(len(root.actions)) if root.N[i] == 0]
        children = [root.child(i) for i in unvisited]
        values = expand(children, NetworkEvaluator(self.net))  # the true result where the game is over
        for i, v in zip(unvisited, values, strict=True):
            q[i] = float(v) * root.to_play
        out = {int(a): float(v) for a, v in zip(root.actions, q, strict=True)}
        if self.rules != NO_RULES:
            games = BatchedGames.from_states([state])
            value, known = exact_values(games.board, games.to_play, games.legal_mask(), self.game, self.rules)
            out.update({int(a): float(value[0, a]) for a in np.flatnonzero(known[0])})
        return out

    def save(self, path) -> None:
        if self.network is None:
            raise ValueError("this player does not know the settings of its network; pass network=...")
        save_checkpoint(path, payload_of(self.net, self.game, self.agent_cfg, self.network))


def player_from_checkpoint(payload: dict) -> AlphaZeroPlayer:
    """The PUCT player of a loaded ``alphazero`` checkpoint (``eval_simulations`` per move)."""
    game = make_game(payload["game"])
    acfg = agent_settings(payload["agent"], Config)
    net = build_policy_value_net(game, payload["network"], acfg.policy_head)
    net.load_state_dict(payload["model"])
    return AlphaZeroPlayer(game, net, acfg.eval_simulations, acfg.c_puct, acfg, dict(payload["network"]))
