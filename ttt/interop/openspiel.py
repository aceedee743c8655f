"""ttt and OpenSpiel: OpenSpiel's MCTS bot at ttt's table, and every ttt board as an OpenSpiel game.

**Cells.** OpenSpiel numbers the cells of ``tic_tac_toe``, ``mnk`` and ``gomoku`` as ttt does:
``row * n + col`` in 2D, ``layer * n * n + row * n + col`` for gomoku's 3D board. A ttt cell is the
OpenSpiel action of the same number (``test_openspiel`` checks each cell's coordinates and that both
engines win on exactly the same sets of cells).

**OpenSpiel's boards** (``NATIVE_GAMES``): 3x3 is ``tic_tac_toe``, 4x4 ``mnk(m=4,n=4,k=4)``, Qubic
``gomoku(size=4,dims=3,connect=4)``. OpenSpiel has no 3x3x3 and no gravity 3D board.
``OpenSpielMCTSPlayer`` (the ``openspiel_mcts`` player) plays OpenSpiel's ``MCTSBot`` on them.

**ttt's boards in OpenSpiel.** Importing this module registers the game ``ttt`` with a parameter
``board`` (default ``3x3``), and for each board the older name ``ttt_<board>``::

    import pyspiel, ttt.interop.openspiel
    game = pyspiel.load_game("ttt(board=4x4x4_gravity)")   # or "ttt_4x4x4_gravity"

Games pickle (``pickle.dumps(game)``): they unpickle by loading their name again, which imports this
module first, so they cross process boundaries (multiprocessing) like OpenSpiel's own games.

They play by ttt's rules engine, so OpenSpiel's algorithms run on Score Four and 3x3x3. Players 0
and 1 are ttt's first (+1, ``x``) and second (-1, ``o``) player; returns are +1 / -1 / 0 at the end.
The observation tensor has three planes over the board, as OpenSpiel's ``tic_tac_toe``: empty
cells, ``o`` pieces, ``x`` pieces.
"""

from __future__ import annotations

import math

import numpy as np
import pyspiel
from open_spiel.python.algorithms import mcts
from open_spiel.python.observation import IIGObserverForPublicInfoGame

from ttt.games import BOARDS, FIRST, Game, State, make_game
from ttt.games.boards import DEFAULT_BOARDS, native_games
from ttt.players.base import Player
from ttt.players.stop import check_stop

NATIVE_GAMES = native_games()  # board -> OpenSpiel's game (the table: ttt.games.boards)
GAME_NAME = "ttt"  # the game with a parameter: ttt(board=4x4x4)
GAME_PREFIX = "ttt_"  # the older per-board names: ttt_4x4x4
DEFAULT_BOARD = DEFAULT_BOARDS["openspiel"]


# ---------------------------------------------------------------------------- OpenSpiel's boards
def native_game(game: Game) -> pyspiel.Game:
    """OpenSpiel's own implementation of ``game``; a one-line ValueError for boards it lacks."""
    if game.name not in NATIVE_GAMES:
        have = ", ".join(f"{b} ({g})" for b, g in NATIVE_GAMES.items())
        raise ValueError(f"OpenSpiel has no {game.name} board; it has {have}")
    return pyspiel.load_game(NATIVE_GAMES[game.name])


def native_state(native: pyspiel.Game, state: State) -> pyspiel.State:
    """The OpenSpiel state with the pieces of ``state`` (which is not finished).

    The pieces are placed first player's and second player's in turn; no line is complete in the
    position, so none is complete on the way and the order does not matter.
    """
    if state.is_terminal():
        raise ValueError(f"{state.game.name}: the game is over")
    board = state.board
    first = [c for c, v in enumerate(board) if v == FIRST]
    second = [c for c, v in enumerate(board) if v == -FIRST]
    out = native.new_initial_state()
    for i in range(len(first) + len(second)):
        out.apply_action(first[i // 2] if i % 2 == 0 else second[i // 2])
    return out


class _StoppableRollouts(mcts.RandomRolloutEvaluator):
    """OpenSpiel's random rollouts, checking ``ttt.players.stop`` before each leaf (a server's deadline)."""

    def evaluate(self, state):
        check_stop()
        return super().evaluate(state)


class OpenSpielMCTSPlayer(Player):
    """OpenSpiel's ``MCTSBot`` with random rollouts, searching OpenSpiel's own implementation of the
    board (see ``ttt.interop.openspiel_mcts`` for the options). Its randomness comes from the
    generator ``act`` is given, so seeded matches repeat."""

    name = "openspiel_mcts"

    def __init__(self, game: Game, simulations: int = 1000, uct_c: float = 2.0, rollouts: int = 1,
                 solve: bool = True) -> None:
        super().__init__(game)
        if int(simulations) < 1 or int(rollouts) < 1:
            raise ValueError(f"openspiel_mcts: simulations and rollouts must be >= 1, got {simulations}, {rollouts}")
        if not 0 <= uct_c < math.inf:  # NaN fails too
            raise ValueError(f"openspiel_mcts: uct_c must be a finite number >= 0, got {uct_c}")
        self.native = native_game(game)
        self.simulations, self.uct_c = int(simulations), float(uct_c)
        self.rollouts, self.solve = int(rollouts), bool(solve)

    def act(self, state: State, rng: np.random.Generator) -> int:
        seeds = rng.integers(2**32, size=2)
        evaluator = _StoppableRollouts(self.rollouts, np.random.RandomState(seeds[0]))
        bot = mcts.MCTSBot(self.native, self.uct_c, self.simulations, evaluator, solve=self.solve,
                           random_state=np.random.RandomState(seeds[1]))
        return int(bot.step(native_state(self.native, state)))

    def __repr__(self) -> str:
        return f"OpenSpielMCTSPlayer({self.game.name}, simulations={self.simulations})"


# ---------------------------------------------------------------------------- ttt's boards in OpenSpiel
def game_name(board: str) -> str:
    """The OpenSpiel name of a ttt board with its parameter, e.g. ``ttt(board=4x4x4_gravity)``."""
    return f"{GAME_NAME}(board={board})"


def load_game(name: str) -> pyspiel.Game:
    """``pyspiel.load_game(name)`` after registering ttt's games; pickled games unpickle through it."""
    register_games()
    return pyspiel.load_game(name)


class TTTState(pyspiel.State):
    """A position of a ttt board for OpenSpiel. Holds plain data (the board, the mover, the winner),
    so OpenSpiel's clones stay cheap; moves are played by ttt's ``State.apply``."""

    def __init__(self, game: TTTGame) -> None:
        super().__init__(game)
        self._board_name = game.board
        rules = make_game(game.board)
        start = rules.initial_state()
        self._cells, self._to_play, self._winner, self._moves = start.board, start.to_play(), 0, 0

    def ttt_state(self) -> State:
        """The same position as a ttt ``State``."""
        return State(make_game(self._board_name), self._cells, self._to_play, self._winner, self._moves)

    def current_player(self) -> int:
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        return 0 if self._to_play == FIRST else 1

    def _legal_actions(self, player: int) -> list[int]:
        return self.ttt_state().legal_actions()

    def _apply_action(self, action: int) -> None:
        s = self.ttt_state().apply(int(action))
        self._cells, self._to_play, self._winner, self._moves = s.board, s.to_play(), s.winner(), s.num_moves

    def _action_to_string(self, player: int, action: int) -> str:
        return f"{'xo'[player]}({make_game(self._board_name).cell_label(action)})"

    def is_terminal(self) -> bool:
        return self._winner != 0 or self._moves == len(self._cells)

    def returns(self) -> list[float]:
        return [float(self._winner), float(-self._winner)]

    def __str__(self) -> str:
        return self.ttt_state().render()


class BoardObserver:
    """Observation of a ttt board: planes (empty, o, x) over the board, as OpenSpiel's tic_tac_toe."""

    def __init__(self, board: str, params) -> None:
        if params:
            raise ValueError(f"observation parameters not supported; passed {params}")
        self.board = board
        shape = (3, *make_game(board).shape)
        self.tensor = np.zeros(int(np.prod(shape)), np.float32)
        self.dict = {"observation": np.reshape(self.tensor, shape)}

    def set_from(self, state: TTTState, player: int) -> None:
        cells = np.array(state._cells)
        planes = self.dict["observation"].reshape(3, -1)
        for i, v in enumerate((0, -FIRST, FIRST)):
            planes[i] = cells == v

    def string_from(self, state: TTTState, player: int) -> str:
        return str(state)


class TTTGame(pyspiel.Game):
    """A ttt board as an OpenSpiel game: ``ttt(board=NAME)``, or under its older name ``ttt_NAME``."""

    def __init__(self, params=None, legacy_board: str | None = None) -> None:
        params = dict(params or {})
        if legacy_board is None:
            board = str(params.get("board", DEFAULT_BOARD))
            if board not in BOARDS:
                raise ValueError(f"ttt: unknown board {board!r}; choose one of {', '.join(BOARDS)}")
            game_type, params = _GAME_TYPE, {"board": board}
        else:
            board, game_type = legacy_board, _LEGACY_TYPES[legacy_board]
        super().__init__(game_type, _game_info(board), params)
        self.board = board

    def new_initial_state(self) -> TTTState:
        return TTTState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return BoardObserver(self.board, params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)

    def __reduce__(self):
        # by name, as OpenSpiel's own games: the class pybind11 would pickle cannot be rebuilt from its state
        return load_game, (str(self),)


def _game_type(short_name: str, long_name: str, parameters: dict) -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=short_name,
        long_name=long_name,
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=2,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=parameters)


def _game_info(board: str) -> pyspiel.GameInfo:
    cells = make_game(board).num_cells
    return pyspiel.GameInfo(num_distinct_actions=cells, max_chance_outcomes=0, num_players=2, min_utility=-1.0,
                            max_utility=1.0, utility_sum=0.0, max_game_length=cells)


_GAME_TYPE = _game_type(GAME_NAME, "ttt: " + ", ".join(BOARDS), {"board": DEFAULT_BOARD})
_LEGACY_TYPES = {board: _game_type(GAME_PREFIX + board, f"ttt {board}", {}) for board in BOARDS}


def _legacy_class(board: str) -> type:
    # a class, not a function: pyspiel keeps its creators past the interpreter's end, and releasing a
    # Python function there aborts the process
    def __init__(self, params=None) -> None:
        TTTGame.__init__(self, params, legacy_board=board)

    return type(f"TTTGame_{board}", (TTTGame,), {"__init__": __init__, "__doc__": f"ttt's {board} board."})


def register_games() -> None:
    """Register ``ttt`` and the older ``ttt_<board>`` names with OpenSpiel (done on import; repeats are no-ops)."""
    known = set(pyspiel.registered_names())
    if GAME_NAME not in known:
        pyspiel.register_game(_GAME_TYPE, TTTGame)
    for board, game_type in _LEGACY_TYPES.items():
        if game_type.short_name not in known:
            pyspiel.register_game(game_type, _legacy_class(board))


register_games()
