"""Match play: N games between two players, half with each seat, with honest statistics.

This is the one place games between players are played; training evaluation, ``ttt.benchmark``
and the tests all come through ``play_match``. ``Recorded`` keeps a player's moves in the games it
plays (``PlayedMoves``), for measures of its play beyond the results (``ttt.evaluation.defence``,
``ttt.evaluation.value_quality``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from ttt.games import BatchedGames, Game
from ttt.games.arrays import arrays_for
from ttt.players import Player


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wilson score interval for a binomial proportion (0, 1 when n == 0)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class SeatResult:
    """Results of one player (the 'agent') from one seat, or over both seats."""

    seat: str  # "first", "second" or "both"
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def win_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    @property
    def draw_rate(self) -> float:
        return self.draws / self.games if self.games else 0.0

    @property
    def loss_rate(self) -> float:
        return self.losses / self.games if self.games else 0.0

    @property
    def score(self) -> float:
        """(wins + draws / 2) / games."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0

    @property
    def win_rate_ci(self) -> tuple[float, float]:
        return wilson_interval(self.wins, self.games)

    def add(self, other: SeatResult) -> None:
        self.games += other.games
        self.wins += other.wins
        self.draws += other.draws
        self.losses += other.losses

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(win_rate=self.win_rate, draw_rate=self.draw_rate, loss_rate=self.loss_rate,
                 win_rate_ci=list(self.win_rate_ci), score=self.score)
        return d


@dataclass
class MatchResult:
    """A match of ``agent`` against ``opponent``: per seat of the agent and over both seats."""

    agent: str
    opponent: str
    board: str
    first: SeatResult = field(default_factory=lambda: SeatResult("first"))
    second: SeatResult = field(default_factory=lambda: SeatResult("second"))
    seconds: float = 0.0
    agent_seconds: float = 0.0  # wall-clock time in the agent's moves, and how many it made (play_games' clock)
    agent_moves: int = 0
    opponent_seconds: float = 0.0
    opponent_moves: int = 0

    @property
    def both(self) -> SeatResult:
        both = SeatResult("both")
        both.add(self.first)
        both.add(self.second)
        return both

    @property
    def games_per_sec(self) -> float:
        return self.both.games / self.seconds if self.seconds > 0 else float("inf")

    @property
    def agent_ms_per_move(self) -> float:
        """Milliseconds per agent move: the time of each batch of moves over its moves (a player that
        searches the games of a batch together shares the time among them)."""
        return 1000 * self.agent_seconds / self.agent_moves if self.agent_moves else float("nan")

    @property
    def opponent_ms_per_move(self) -> float:
        return 1000 * self.opponent_seconds / self.opponent_moves if self.opponent_moves else float("nan")

    def seats(self) -> list[SeatResult]:
        return [r for r in (self.first, self.second, self.both) if r.games]

    def rows(self, opponent: str | None = None) -> list[dict]:
        """Machine-readable rows, one per seat played and one over both seats (the JSON results
        of ``ttt.benchmark`` and ``final_eval.json``)."""
        label = self.opponent if opponent is None else opponent
        return [dict(opponent=label, **s.as_dict(), games_per_sec=self.games_per_sec,
                     agent_ms_per_move=self.agent_ms_per_move, opponent_ms_per_move=self.opponent_ms_per_move)
                for s in self.seats()]

    def summary(self) -> str:
        b = self.both
        lo, hi = b.win_rate_ci
        return (f"{self.agent} vs {self.opponent} on {self.board}: {b.wins}W {b.draws}D {b.losses}L "
                f"of {b.games} (win rate {b.win_rate:.3f} [{lo:.3f}, {hi:.3f}], score {b.score:.3f})")


@dataclass
class PlayedMoves:
    """One player's moves in the games it played, one entry per move (numpy arrays)."""

    boards: np.ndarray  # (N, cells) int8: the position before the move (+1 first player, -1 second, 0 empty)
    movers: np.ndarray  # (N,) int8: the player's side in that game (+1 first, -1 second)
    moves: np.ndarray  # (N,) int64: the cell it played
    outcomes: np.ndarray  # (N,) int8: the game's result for the player (+1 won, 0 drawn, -1 lost)
    ended: np.ndarray  # (N,) bool: the move ended the game (its afterstate is terminal)
    batches: np.ndarray  # (N,) int64: which batch of games (``play_games`` call) the move belongs to

    def afterstates(self) -> np.ndarray:
        """(N, cells) int8: the boards right after each move."""
        after = self.boards.copy()
        after[np.arange(len(after)), self.moves] = self.movers
        return after


class Recorded(Player):
    """``player`` playing as itself, keeping each move it makes in batched games (``act_batch``), with
    the games, so that once they are over ``moves()`` gives every move with its game's result. Any other
    attribute is the player's own (``values``, ``without_rules``, ...). One ``play_games`` call is one
    batch: ``play_match`` plays one per seat, so a batch is the games against one opponent from one seat."""

    def __init__(self, player: Player) -> None:
        super().__init__(player.game)
        self.player = player
        self.name, self.batched_on_device = player.name, player.batched_on_device
        self._plies: list[tuple] = []  # (games, rows, boards, movers, moves) of each act_batch call

    def __getattr__(self, name: str):  # only for what Recorded itself lacks
        if name == "player":
            raise AttributeError(name)
        return getattr(self.player, name)

    def act(self, state, rng) -> int:
        return self.player.act(state, rng)

    def action_values(self, state):
        return self.player.action_values(state)

    def act_batch(self, games: BatchedGames, rng) -> np.ndarray:
        actions = self.player.act_batch(games, rng)
        xp = games.xp
        rows = xp.flatnonzero(~games.done)
        self._plies.append((games, rows, games.board[rows], games.to_play[rows], xp.asarray(actions)[rows]))
        return actions

    def moves(self) -> PlayedMoves:
        """Every move recorded so far, in the order played; ``outcomes`` and ``ended`` read the games
        as they are now (over, after ``play_match``)."""
        batch_of: dict[int, int] = {}
        parts = []
        for games, rows, boards, movers, moves in self._plies:
            xp = games.xp
            rows, boards = xp.numpy(rows), xp.numpy(boards).astype(np.int8)
            movers = xp.numpy(movers).astype(np.int8)
            pieces = (boards != 0).sum(1)
            parts.append((boards, movers, xp.numpy(moves).astype(np.int64),
                          (xp.numpy(games.winner)[rows] * movers).astype(np.int8),
                          xp.numpy(games.num_moves)[rows] == pieces + 1,
                          np.full(len(rows), batch_of.setdefault(id(games), len(batch_of)), dtype=np.int64)))
        if not parts:
            cells = self.game.num_cells
            return PlayedMoves(np.zeros((0, cells), np.int8), np.zeros(0, np.int8), np.zeros(0, np.int64),
                               np.zeros(0, np.int8), np.zeros(0, bool), np.zeros(0, np.int64))
        return PlayedMoves(*(np.concatenate(x) for x in zip(*parts, strict=True)))


def play_games(game: Game, first: Player, second: Player, num_games: int, rng,
               progress: Callable[[int], None] | None = None, device=None,
               clock: list[list[float]] | None = None) -> np.ndarray:
    """Play ``num_games`` games with ``first`` moving first; returns the winners (+1, -1, 0).

    ``progress(finished)`` is called after every ply with the number of games over so far.
    ``clock``: ``[[seconds, moves], [seconds, moves]]`` of the first and the second player, added to.
    ``device`` None: numpy games and a numpy ``rng``; else games on that torch device and ``rng`` a
    ``torch.Generator`` there (both players must be ``batched_on_device``).
    """
    if num_games <= 0:
        return np.zeros(0, dtype=np.int8)
    games = BatchedGames(game, num_games, device)
    ply = 0
    while not games.done.all():
        # games that start together stay in step: every live game has the same player to move
        mover = first if ply % 2 == 0 else second
        if clock is None:
            games.play(mover.act_batch(games, rng))
        else:
            t0, live = time.perf_counter(), int((~games.done).sum())
            actions = mover.act_batch(games, rng)
            clock[ply % 2][0] += time.perf_counter() - t0
            clock[ply % 2][1] += live
            games.play(actions)
        ply += 1
        if progress is not None:
            progress(int(games.done.sum()))
    return games.xp.numpy(games.winner).copy()


def play_match(game: Game, agent: Player, opponent: Player, num_games: int, seed: int = 0,
               seats: str = "both", agent_name: str | None = None,
               opponent_name: str | None = None,
               progress: Callable[[int, int], None] | None = None, device=None) -> MatchResult:
    """Play ``num_games`` games of ``agent`` against ``opponent``.

    ``seats="both"`` gives the agent the first seat in half the games (the extra game of an odd
    count goes to the first seat); "first" or "second" fixes the agent's seat. The same seed gives
    the same result. ``progress(finished, num_games)`` is called after every ply. ``device`` (a torch
    device, e.g. ``"cuda"``): the games run there when both players are ``batched_on_device``
    (random, benchmark, dqn), drawing from a ``torch.Generator`` seeded with ``seed``; otherwise
    (search players) on the host.
    """
    if num_games < 1:
        raise ValueError(f"num_games must be >= 1, got {num_games}")
    if seats not in ("both", "first", "second"):
        raise ValueError(f"seats must be 'both', 'first' or 'second', got {seats!r}")
    n_first = {"both": (num_games + 1) // 2, "first": num_games, "second": 0}[seats]
    n_second = num_games - n_first
    if device is None or not (agent.batched_on_device and opponent.batched_on_device):
        device = None
    rng = arrays_for(device).generator(seed)
    result = MatchResult(agent_name or getattr(agent, "name", "agent"),
                         opponent_name or getattr(opponent, "name", "opponent"), game.name)
    t0 = time.perf_counter()
    for seat, n, p1, p2, sign in (("first", n_first, agent, opponent, 1),
                                  ("second", n_second, opponent, agent, -1)):
        if n == 0:
            continue
        offset = n_first if seat == "second" else 0
        report = None if progress is None else (lambda k, offset=offset: progress(offset + k, num_games))
        clock = [[0.0, 0], [0.0, 0]]
        w = play_games(game, p1, p2, n, rng, report, device, clock) * sign
        mine, theirs = clock if seat == "first" else clock[::-1]
        result.agent_seconds += mine[0]
        result.agent_moves += int(mine[1])
        result.opponent_seconds += theirs[0]
        result.opponent_moves += int(theirs[1])
        r = getattr(result, seat)
        r.games, r.wins, r.draws, r.losses = n, int((w > 0).sum()), int((w == 0).sum()), int((w < 0).sum())
    result.seconds = time.perf_counter() - t0
    return result
