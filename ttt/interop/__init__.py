"""Bridges to the libraries researchers use: OpenSpiel here, PettingZoo and Gymnasium in ``ttt.interop.envs``
(registered with Gymnasium here, as ``ttt/<board>-v0``).

Nothing here imports those libraries until it is used, so ``ttt`` works without them; they come
with the optional extras (``pip install -e '.[openspiel]'``, ``'.[envs]'``, or ``'.[all]'``).
"""

from __future__ import annotations

from ttt.games import Game
from ttt.players.base import Player


def openspiel_mcts(game: Game, simulations: int = 1000, uct_c: float = 2.0, rollouts: int = 1,
                   solve: bool = True) -> Player:
    """OpenSpiel's ``MCTSBot`` with random rollouts, as a ``ttt`` player (the ``openspiel_mcts`` spec).

    It plays OpenSpiel's own implementation of the board: 3x3 (``tic_tac_toe``), 4x4
    (``mnk(m=4,n=4,k=4)``) and 4x4x4 (``gomoku(size=4,dims=3,connect=4)``). ``simulations`` per
    move, exploration ``uct_c``, ``rollouts`` random playouts per leaf, ``solve``: back up proven
    wins and losses (MCTS-Solver), as in OpenSpiel's defaults. Raises a one-line ValueError on
    another board or without OpenSpiel.
    """
    try:
        from ttt.interop.openspiel import OpenSpielMCTSPlayer
    except ModuleNotFoundError as e:
        if e.name is None or e.name.split(".")[0] not in ("pyspiel", "open_spiel"):
            raise
        raise ValueError(f"openspiel_mcts needs OpenSpiel ({e.name} is not installed): "
                         "pip install -e '.[openspiel]' (Python >= 3.11)") from None
    return OpenSpielMCTSPlayer(game, simulations, uct_c, rollouts, solve)


def gym_id(board: str) -> str:
    """The Gymnasium id of a board's environment, e.g. ``ttt/4x4x4_gravity-v0``."""
    return f"ttt/{board}-v0"


def register_gymnasium_envs() -> None:
    """Register ``ttt/<board>-v0`` for every board with Gymnasium (``import ttt`` does it when Gymnasium
    is installed). The environment is ``ttt.interop.envs.gym_env``: ``gymnasium.make("ttt/4x4x4-v0",
    opponent="alphabeta:1", seat="random", render_mode="rgb_array")``. Repeats are no-ops."""
    import gymnasium

    from ttt.games import BOARDS

    for board in BOARDS:
        if gym_id(board) not in gymnasium.registry:
            # the entry point is a string: PettingZoo and the envs module load at make(), not here.
            # No OrderEnforcing wrapper: the env refuses step() before reset() itself, and render()
            # before reset() draws the empty board
            gymnasium.register(gym_id(board), entry_point="ttt.interop.envs:gym_env", kwargs={"board": board},
                               order_enforce=False)


__all__ = ["gym_id", "openspiel_mcts", "register_gymnasium_envs"]
