"""The curriculum: whom each training game is played against, the pool of frozen copies, and the
learner's TensorBoard scalars.

Before ``switch_episode`` games the opponent is ``opponent``, from then on ``opponent_after``
(``random``, ``frozen``, ``benchmark`` or ``self_play``), with a ``benchmark_fraction`` share of the
later games against the benchmark player. A frozen opponent is a copy of the learner's weights, taken
when the curriculum first needs one and again every ``refresh_every`` games; the pool keeps the newest
``frozen_pool`` copies and each frozen-opponent game draws one of them. A frozen copy picks its own
best move (the argmax of its afterstate values, with the learner's rules), exploring with
``frozen_epsilon``.

TensorBoard tags of this learner (besides the ``eval/`` tags of ``ttt.training``): ``train/td_loss``,
``train/epsilon``, ``train/opponent`` (the opponent of games that start now: 0 random, 1 frozen,
2 benchmark, 3 self_play), ``train/episodes_per_sec``, ``train/benchmark_share`` (share of the games
in progress played against the benchmark player) and ``train/frozen_refreshes`` (copies taken of the
frozen opponent).
"""

from __future__ import annotations

import copy

from ttt.agents.dqn.moves import epsilon_greedy, move_scores
from ttt.games import random_legal_actions

# each game's opponent as a code (the trainer's per-game ``opponent`` array, the train/opponent scalar)
OPPONENT_PHASES = {"random": 0, "frozen": 1, "benchmark": 2, "self_play": 3}
OPPONENTS = tuple(OPPONENT_PHASES)


def phase(settings, episodes: int) -> str:
    """The opponent of games that start after ``episodes`` games."""
    return settings.opponent if episodes < settings.switch_episode else settings.opponent_after


def phase_label(settings, episodes: int, pool_size: int) -> str:
    """The opponents of games that start now, for people: e.g. ``80% benchmark / 20% frozen``."""
    name, share = phase(settings, episodes), settings.benchmark_fraction
    if name == "frozen" and settings.frozen_pool > 1:
        name = f"frozen (pool of {pool_size})"
    if episodes < settings.switch_episode or share <= 0:
        return name
    return "benchmark" if share >= 1 else f"{share:.0%} benchmark / {1 - share:.0%} {name}"


def draw_opponents(trainer, envs, episodes) -> None:
    """Draw the opponents of the trainer's games starting in ``envs`` (and their frozen copies); game i
    starts when ``episodes[i]`` games have been played. Drawn in the order of ``envs``: the
    benchmark-share draws first, then the pool draws."""
    xp, settings = trainer.xp, trainer.settings
    before = episodes < settings.switch_episode
    opponent = xp.astype(xp.where(before, OPPONENT_PHASES[settings.opponent],
                                  OPPONENT_PHASES[settings.opponent_after]), "int8")
    if settings.benchmark_fraction > 0:
        after = xp.flatnonzero(~before)
        if len(after):
            benchmark = xp.random(trainer.rng, len(after)) < settings.benchmark_fraction
            opponent[after] = xp.astype(xp.where(benchmark, OPPONENT_PHASES["benchmark"], opponent[after]), "int8")
    trainer.opponent[envs] = opponent
    trainer.pool_index[envs] = max(len(trainer.pool) - 1, 0)
    if len(trainer.pool) > 1:
        frozen = envs[opponent == OPPONENT_PHASES["frozen"]]
        if len(frozen):
            trainer.pool_index[frozen] = xp.integers(trainer.rng, len(trainer.pool), len(frozen))


def refresh_frozen(trainer) -> None:
    """Take a frozen copy of the trainer's weights when the curriculum switches to it, and every
    ``refresh_every`` games; the pool keeps the newest ``frozen_pool`` copies."""
    settings = trainer.settings
    if trainer.phase() != "frozen" and settings.opponent != "frozen":
        return
    due = not trainer.pool or (settings.refresh_every > 0
                               and trainer.episodes - trainer.frozen_taken_at >= settings.refresh_every)
    if due:
        trainer.pool.append(copy.deepcopy(trainer.net).requires_grad_(False))
        if len(trainer.pool) > settings.frozen_pool:
            trainer.pool.pop(0)
            trainer.pool_index -= 1  # games in progress keep their copy (or the oldest one left)
            trainer.xp.put_where(trainer.pool_index, trainer.pool_index < 0, 0)
        trainer.frozen_taken_at = trainer.episodes
        trainer.frozen_refreshes += 1


def opponent_moves(trainer, rows, chosen) -> None:
    """The opponents' moves in the trainer's games ``rows``, written into ``chosen``."""
    g, rng = trainer.games, trainer.rng
    opponents = trainer.opponent[rows]
    pick = rows[opponents == OPPONENT_PHASES["random"]]
    if len(pick):
        chosen[pick] = random_legal_actions(g.legal_mask()[pick], rng)
    pick = rows[opponents == OPPONENT_PHASES["benchmark"]]
    if len(pick):
        chosen[pick] = trainer.benchmark.act_batch(g, rng)[pick]
    frozen = rows[opponents == OPPONENT_PHASES["frozen"]]
    for i in range(len(trainer.pool) if len(frozen) else 0):
        pick = frozen[trainer.pool_index[frozen] == i]
        if len(pick):
            # a frozen copy picks its own best move: the argmax of its afterstate values (or its rank head's
            # order), same rules
            order = move_scores(trainer.pool[i], g, pick, trainer.rules, trainer.tactics(pick))[0]
            chosen[pick] = epsilon_greedy(order, trainer.settings.frozen_epsilon, rng, trainer.xp)


def log_scalars(run, trainer, episode: int, epsilon: float) -> str:
    """Log the learner's ``train/`` scalars at ``episode``; returns the progress line's opponent part."""
    run.log("train/td_loss", trainer.take_loss(), episode)
    run.log("train/epsilon", epsilon, episode)
    run.log("train/opponent", OPPONENT_PHASES[trainer.phase()], episode)
    share = float((trainer.opponent == OPPONENT_PHASES["benchmark"]).sum()) / len(trainer.opponent)
    run.log("train/benchmark_share", share, episode)
    run.log("train/frozen_refreshes", trainer.frozen_refreshes, episode)
    return f"opponent {trainer.phase_label()}"
