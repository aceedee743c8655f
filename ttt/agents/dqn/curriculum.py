"""The curriculum: whom each training game is played against, the pool of frozen copies, and the
learner's TensorBoard scalars.

Before ``switch_episode`` games the opponent is ``opponent``, from then on ``opponent_after``
(``random``, ``frozen``, ``benchmark`` or ``self_play``), with a ``benchmark_fraction`` share of the
later games against the benchmark player. A frozen opponent is a copy of the learner's weights, taken
when the curriculum first needs one and again every ``refresh_every`` games; the pool keeps the newest
``frozen_pool`` copies and each frozen-opponent game draws one of them. A frozen copy picks its own
best move (the argmax of its afterstate values, with the learner's rules), exploring with
``frozen_epsilon``.

TensorBoard tags of this learner (besides the ``eval/`` tags of ``ttt.harness.training``): ``train/td_loss``,
``train/epsilon``, ``train/opponent`` (the opponent of games that start now: 0 random, 1 frozen,
2 benchmark, 3 self_play), ``train/episodes_per_sec``, ``train/benchmark_share`` (share of the games
in progress played against the benchmark player), ``train/frozen_refreshes`` (copies taken of the
frozen opponent) and the value head's health figures ``train/health/...`` (``ttt.agents.dqn.health``).
"""

from __future__ import annotations

import copy

from ttt.agents.dqn.health import run_health
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


def draw_opponents(trainer, r: int, envs, episodes) -> None:
    """Draw the opponents of run ``r``'s games starting in ``envs`` (and their frozen copies); game i
    starts when the run has played ``episodes[i]`` games. Drawn from the run's stream in the order of
    ``envs``: the benchmark-share draws first, then the pool draws."""
    xp, settings, rng, pool = trainer.xp, trainer.settings, trainer.rngs[r], trainer.pools[r]
    before = episodes < settings.switch_episode
    opponent = xp.astype(xp.where(before, OPPONENT_PHASES[settings.opponent],
                                  OPPONENT_PHASES[settings.opponent_after]), "int8")
    if settings.benchmark_fraction > 0:
        after = xp.flatnonzero(~before)
        if len(after):
            benchmark = xp.random(rng, len(after)) < settings.benchmark_fraction
            opponent[after] = xp.astype(xp.where(benchmark, OPPONENT_PHASES["benchmark"], opponent[after]), "int8")
    trainer.opponent[envs] = opponent
    trainer.pool_index[envs] = max(len(pool) - 1, 0)
    if len(pool) > 1:
        frozen = envs[opponent == OPPONENT_PHASES["frozen"]]
        if len(frozen):
            trainer.pool_index[frozen] = xp.integers(rng, len(pool), len(frozen))


def refresh_frozen(trainer, r: int) -> None:
    """Take a frozen copy of run ``r``'s weights when the curriculum switches to it, and every
    ``refresh_every`` games; the pool keeps the newest ``frozen_pool`` copies."""
    settings, pool, episodes = trainer.settings, trainer.pools[r], int(trainer.run_episodes[r])
    if phase(settings, episodes) != "frozen" and settings.opponent != "frozen":
        return
    due = not pool or (settings.refresh_every > 0 and episodes - trainer.frozen_taken_at[r] >= settings.refresh_every)
    if due:
        pool.append(copy.deepcopy(trainer.nets[r]).requires_grad_(False))
        if len(pool) > settings.frozen_pool:
            pool.pop(0)
            index = trainer.pool_index[trainer.games_of(r)]  # a view: games in progress keep their copy
            index -= 1  # (or the oldest one left)
            trainer.xp.put_where(index, index < 0, 0)
        trainer.frozen_taken_at[r] = episodes
        trainer.frozen_refreshes[r] += 1


def opponent_moves(trainer, rows, chosen) -> None:
    """The opponents' moves in the trainer's games ``rows`` (ascending), written into ``chosen``. Each
    run draws from its own stream: its random player's moves, then its benchmark player's, then its
    frozen copies' (oldest first)."""
    g, xp = trainer.games, trainer.xp
    opponents = trainer.opponent[rows]
    bench = rows[opponents == OPPONENT_PHASES["benchmark"]]
    choice = trainer.benchmark.choices(g) if len(bench) else None
    slots = _frozen_orders(trainer, rows[opponents == OPPONENT_PHASES["frozen"]])
    for r, at in trainer.each_run(rows):
        rng, mine = trainer.rngs[r], rows[at]
        kinds = opponents[at]
        pick = mine[kinds == OPPONENT_PHASES["random"]]
        if len(pick):
            chosen[pick] = random_legal_actions(g.legal_mask()[pick], rng)
        pick = mine[kinds == OPPONENT_PHASES["benchmark"]]
        if len(pick):  # the benchmark player draws for every game of the run, as it plays them all
            games = trainer.games_of(r)
            chosen[pick] = random_legal_actions(choice[games], rng)[pick - games.start]
        for pick, order, parts in slots:
            if r in parts:
                chosen[pick[parts[r]]] = epsilon_greedy(order[parts[r]], trainer.settings.frozen_epsilon, rng, xp)


def _frozen_orders(trainer, frozen) -> list:
    """Each frozen copy picks its own best move: the argmax of its afterstate values (or its rank head's
    order), same rules. The copies of slot i of every run valued in one call: ``(games, order, {run: its
    games among them})`` per slot with games in ``frozen``."""
    slots = []
    for i in range(max(len(p) for p in trainer.pools) if len(frozen) else 0):
        pick = frozen[trainer.pool_index[frozen] == i]
        if len(pick):
            nets = [p[i] if i < len(p) else None for p in trainer.pools]
            order = move_scores(trainer.scorer(pick, nets), trainer.games, pick, trainer.rules,
                                trainer.tactics(pick), gamma=float(trainer.settings.gamma))[0]
            slots.append((pick, order, dict(trainer.each_run(pick))))
    return slots


def log_scalars(run, trainer, r: int, episode: int, epsilon: float) -> str:
    """Log run ``r``'s ``train/`` scalars at ``episode``; returns the progress line's opponent part."""
    run.log("train/td_loss", trainer.take_loss(r), episode)
    run.log("train/epsilon", epsilon, episode)
    run.log("train/opponent", OPPONENT_PHASES[trainer.phase(r)], episode)
    opponent = trainer.opponent[trainer.games_of(r)]
    share = float((opponent == OPPONENT_PHASES["benchmark"]).sum()) / len(opponent)
    run.log("train/benchmark_share", share, episode)
    run.log("train/frozen_refreshes", int(trainer.frozen_refreshes[r]), episode)
    figures = run_health(trainer, r)
    for name, value in figures.items():
        run.log(f"train/health/{name}", value, episode)
    return f"opponent {trainer.phase_label(r)}, saturated {figures['saturated']:.2f}, spread {figures['spread']:.3f}"
