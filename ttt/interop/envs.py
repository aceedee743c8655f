"""PettingZoo and Gymnasium environments for every ttt board (the ``envs`` extra).

* ``aec_env(board)``: a PettingZoo AEC environment for two agents, ``player_1`` (first, X) and
  ``player_2`` (second, O), shaped like PettingZoo's ``tictactoe_v3``. Each agent observes
  ``{"observation", "action_mask"}``: ``observation`` is int8 of shape ``board shape + (2,)``, plane 0
  the observing agent's pieces and plane 1 the opponent's; ``action_mask`` is int8 of shape
  ``(cells,)``, 1 on the legal moves of the agent to move (all 0 for the other agent). Rewards are
  +1 / -1 to the winner / loser at the end, 0 for a draw. As in PettingZoo's classic games, an
  illegal move ends the game with -1 for the agent that made it.
* ``gym_env(board, opponent=NAME)``: a Gymnasium environment for one agent against any ttt player
  (a spec as in ``ttt.benchmark``: ``random``, ``alphabeta:2``, ``openspiel_mcts:200``, a checkpoint
  path, or a ``Player``). The observation is float32 of shape ``(cells,)``: +1 own piece, -1 the
  opponent's, 0 empty (``State.observation``). The legal moves come as ``info["action_mask"]`` and
  from ``action_masks()`` (the name sb3-contrib's maskable algorithms call). Reward +1 win, -1 loss,
  0 draw; an illegal move ends the episode with -1 and ``info["illegal_move"] = True``. ``seat`` is
  ``"first"``, ``"second"`` or ``"random"`` (drawn at each reset); the opponent's moves draw on the
  environment's seeded generator, so ``reset(seed=...)`` repeats an episode.

Both render through ``ttt.games.render``: ``render_mode="ansi"`` returns the board as text with the
last move and, at the end, the winning line; ``"human"`` prints that text; ``"rgb_array"`` returns an
(H, W, 3) uint8 picture (the layers side by side, the last move framed, the winning line marked;
needs matplotlib, the ``plot`` extra). Cells are ttt's (and OpenSpiel's) numbering, see
``ttt.games.rules``.

Importing ``ttt`` registers the Gymnasium ids ``ttt/<board>-v0`` (``GYM_IDS``) when Gymnasium is
installed: ``gymnasium.make("ttt/4x4x4-v0", opponent="alphabeta:1", seat="random")``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
    from pettingzoo import AECEnv
    from pettingzoo.utils import AgentSelector, wrappers
except ModuleNotFoundError as e:  # pragma: no cover - depends on the installed extras
    raise ModuleNotFoundError(f"ttt.interop.envs needs pettingzoo and gymnasium ({e.name} is not installed): "
                              "pip install -e '.[envs]'", name=e.name) from None

from ttt.games import FIRST, Game, State, make_game, render
from ttt.players import Player

RENDER_MODES = ["human", "ansi", "rgb_array"]


def _render(state: State, render_mode: str | None) -> str | np.ndarray | None:
    if render_mode is None:
        gymnasium.logger.warn(f"render() called without a render_mode (choose one of {', '.join(RENDER_MODES)})")
        return None
    if render_mode == "rgb_array":
        return render.render_rgb(state.game, state.board, state.last_action)
    text = render.render_text(state.game, state.board, state.last_action)
    if render_mode == "human":
        print(text + "\n")
        return None
    return text


# ---------------------------------------------------------------------------- PettingZoo
def cell_action(action: Any) -> int:
    """``action`` as a cell number: an integer (Python or numpy, or a 0-d integer array). A float
    such as 3.7 is refused (TypeError), not truncated to another cell; an integer past every cell
    (``2**70`` too, which numpy holds as no integer type) is a cell number that is no legal move."""
    if isinstance(action, int) and not isinstance(action, bool):
        return action
    value = np.asarray(action)
    if value.ndim != 0 or not np.issubdtype(value.dtype, np.integer):
        raise TypeError(f"action {action!r}: a move is an integer cell number, not a {type(action).__name__}")
    return int(value)


class TTTAECEnv(AECEnv):
    """Two agents take turns on a ttt board (see the module docstring); ``aec_env`` wraps it."""

    metadata = {"render_modes": RENDER_MODES, "name": "ttt_v0", "is_parallelizable": False, "render_fps": 1}

    def __init__(self, board: str, render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        self.game: Game = make_game(board)
        self.metadata = {**self.metadata, "name": f"ttt_{board}_v0"}
        self.render_mode = render_mode
        self.possible_agents = ["player_1", "player_2"]
        cells = self.game.num_cells
        self.observation_spaces = {a: spaces.Dict({
            "observation": spaces.Box(0, 1, (*self.game.shape, 2), np.int8),
            "action_mask": spaces.Box(0, 1, (cells,), np.int8)}) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(cells) for a in self.possible_agents}
        self.state = self.game.initial_state()
        self._selector = AgentSelector(self.possible_agents)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def _piece(self, agent: str) -> int:
        return FIRST if agent == self.possible_agents[0] else -FIRST

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        board = self.state.array().reshape(self.game.shape)
        me = self._piece(agent)
        observation = np.stack([board == me, board == -me], axis=-1).astype(np.int8)
        mask = np.zeros(self.game.num_cells, dtype=np.int8)
        if agent == self.agent_selection and not self.state.is_terminal():
            mask[self.state.legal_actions()] = 1
        return {"observation": observation, "action_mask": mask}

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.state = self.game.initial_state()
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._selector.reinit(self.agents)
        self.agent_selection = self._selector.reset()

    def step(self, action: int) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        self.state = self.state.apply(cell_action(action))
        if self.state.is_terminal():
            winner = self.state.winner()
            for a in self.agents:
                self.rewards[a] = winner * self._piece(a)
            self.terminations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()
        self.agent_selection = self._selector.next()
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        return _render(self.state, self.render_mode)

    def close(self) -> None:
        pass


def aec_env(board: str, render_mode: str | None = None) -> AECEnv:
    """The PettingZoo AEC environment of ``board``, wrapped as PettingZoo's classic games are: an
    illegal move ends the game (-1 to its maker), out-of-range actions assert, and the call order
    is enforced."""
    env = TTTAECEnv(board, render_mode)
    env = wrappers.TerminateIllegalWrapper(env, illegal_reward=-1)
    env = wrappers.AssertOutOfBoundsWrapper(env)
    return wrappers.OrderEnforcingWrapper(env)


# ---------------------------------------------------------------------------- Gymnasium
class TTTGymEnv(gymnasium.Env):
    """One agent against a fixed ttt player (see the module docstring); made by ``gym_env``."""

    metadata = {"render_modes": RENDER_MODES, "render_fps": 1}

    def __init__(self, game: Game, opponent: Player, seat: str = "first", render_mode: str | None = None) -> None:
        if seat not in ("first", "second", "random"):
            raise ValueError(f"seat must be 'first', 'second' or 'random', got {seat!r}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        if opponent.game.name != game.name:
            raise ValueError(f"the opponent plays {opponent.game.name}, not {game.name}")
        self.game, self.opponent, self.seat, self.render_mode = game, opponent, seat, render_mode
        self.observation_space = spaces.Box(-1.0, 1.0, (game.num_cells,), np.float32)
        self.action_space = spaces.Discrete(game.num_cells)
        self.state = game.initial_state()
        self.piece = FIRST
        self.ended = True  # until reset

    def action_masks(self) -> np.ndarray:
        """Bool mask of the agent's legal moves."""
        return self.state.legal_mask()

    def _observe(self) -> tuple[np.ndarray, dict[str, Any]]:
        seat = "first" if self.piece == FIRST else "second"
        mask = self.action_masks().astype(np.int8)  # int8: what ``action_space.sample(mask=...)`` takes
        # multiplied as integers: a float 0 * -1 would be -0.0 on every empty cell of the second seat
        return (self.state.array() * np.int8(self.piece)).astype(np.float32), {"action_mask": mask, "seat": seat}

    def _opponent_moves(self) -> None:
        if not self.state.is_terminal() and self.state.to_play() != self.piece:
            self.state = self.state.apply(int(self.opponent.act(self.state, self.np_random)))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        seat = self.seat if self.seat != "random" else ("first", "second")[int(self.np_random.integers(2))]
        self.piece = FIRST if seat == "first" else -FIRST
        self.state = self.game.initial_state()
        self.ended = False
        self._opponent_moves()
        if self.render_mode == "human":
            self.render()
        return self._observe()

    def step(self, action):
        if self.ended:
            raise RuntimeError("step() before reset() or after the episode ended; call reset()")
        action = cell_action(action)
        if not self.state.is_legal(action):
            self.ended = True
            obs, info = self._observe()
            return obs, -1.0, True, False, {**info, "illegal_move": True}
        self.state = self.state.apply(int(action))
        self._opponent_moves()
        if self.render_mode == "human":
            self.render()
        obs, info = self._observe()
        done = self.ended = self.state.is_terminal()
        reward = float(self.state.winner() * self.piece) if done else 0.0
        return obs, reward, done, False, info

    def render(self) -> str | None:
        return _render(self.state, self.render_mode)


def gym_env(board: str, opponent: str | Player = "random", seat: str = "first",
            render_mode: str | None = None) -> gymnasium.Env:
    """A Gymnasium environment: one agent on ``board`` against ``opponent`` (a player spec or a Player)."""
    game = make_game(board)
    if not isinstance(opponent, Player):
        from ttt.harness.specs import load_agents

        _, [(_, opponent)] = load_agents([opponent], board)
    return TTTGymEnv(game, opponent, seat, render_mode)
