"""A run's checkpoint state (``Trainer.state_dict`` / ``load_state_dict``): its weights, optimiser,
frozen copies, games in progress, random streams and each part's state, in one format for every K.

Side by side (K > 1) the runs share one optimiser over their stacked parameters (``td.make_optimizer``);
a run's state is that of the optimiser its network alone would have (``run_optimizer``), so a run saved
side by side resumes alone and the other way round."""

from __future__ import annotations

import copy
import random

import torch

from ttt.agents.dqn.td import make_optimizer
from ttt.checkpoint import CheckpointError, load_weights

# the per-game arrays a checkpoint holds: the BatchedGames state, then the trainer's own
GAME_ARRAYS = ("board", "to_play", "done", "winner", "num_moves", "last_action")
TRAINER_ARRAYS = ("agent_seat", "opponent", "pool_index", "prev", "has_prev")
TRACE_ARRAYS = ("trace_obs", "trace_boot", "trace_len")  # with td_lambda > 0: each seat's afterstates so far


def games_state(games, xp, rows=slice(None)) -> dict:
    """The state arrays of ``games`` (``rows`` of them) as CPU tensors."""
    return {name: xp.to_tensor(xp.copy(getattr(games, name)[rows])).cpu() for name in GAME_ARRAYS}


def load_games_state(games, xp, saved: dict, rows=slice(None)) -> None:
    """Put ``games_state``'s arrays back into ``rows`` of ``games``."""
    for name in GAME_ARRAYS:
        getattr(games, name)[rows] = xp.asarray(saved[name].numpy())


def run_optimizer(t, r: int, state: dict | None = None) -> torch.optim.Optimizer:
    """Run ``r``'s optimiser as its own (``make_optimizer`` of its network alone), holding its state;
    with ``state`` (such an optimiser's ``state_dict``), that state is loaded into the trainer's."""
    if t.k == 1:
        if state is not None:
            t.optimizer.load_state_dict(state)
        return t.optimizer
    own = make_optimizer(t.settings, t.nets[r])
    groups = t.optimizer.param_groups[0 if t.merged else r * t.groups:][:t.groups]
    if state is not None:
        own.load_state_dict(state)
        for mine, group in zip(own.param_groups, groups, strict=True):
            group["lr"] = mine["lr"]
        for p in t.nets[r].parameters():
            t.optimizer.state.pop(p, None)
            if p in own.state:
                t.optimizer.state[p] = own.state[p]
        return own
    for mine, group in zip(own.param_groups, groups, strict=True):
        mine["lr"] = group["lr"]
    for p in t.nets[r].parameters():
        if p in t.optimizer.state:
            own.state[p] = t.optimizer.state[p]
    return own


def state_dict(t, r: int) -> dict:
    """Everything run ``r`` of trainer ``t`` needs to continue."""
    xp, rng, games = t.xp, t.rngs[r], t.games_of(r)
    generator = {"device": rng.get_state()} if xp.is_torch else {"numpy": rng.bit_generator.state}
    state = {
        "weights": t.weights(r),
        "optimizer": run_optimizer(t, r).state_dict(),
        "pool": [f.state_dict() for f in t.pools[r]],
        "frozen_taken_at": int(t.frozen_taken_at[r]),
        "frozen_refreshes": int(t.frozen_refreshes[r]),
        "episodes": int(t.run_episodes[r]),
        "steps": int(t.run_steps[r]),
        "envs": {**games_state(t.games, xp, games),
                 **{name: xp.to_tensor(xp.copy(getattr(t, name)[games])).cpu() for name in t.arrays}},
        "rng": {**generator, "torch": torch.get_rng_state(), "python": random.getstate()},
    }
    for part in t.parts:
        state.update(part.state_dict(r))
    return state


def load_state_dict(t, s: dict, r: int) -> None:
    """Continue run ``r`` of trainer ``t`` from its ``state_dict``."""
    net, xp, games = t.nets[r], t.xp, t.games_of(r)
    load_weights(net, s["weights"])
    run_optimizer(t, r, s["optimizer"])
    t.pools[r] = []
    for weights in s["pool"]:
        frozen = copy.deepcopy(net).requires_grad_(False)
        load_weights(frozen, weights)
        t.pools[r].append(frozen)
    t.frozen_taken_at[r], t.frozen_refreshes[r] = s["frozen_taken_at"], s["frozen_refreshes"]
    t.run_episodes[r], t.run_steps[r] = s["episodes"], s["steps"]
    envs = s["envs"]
    if tuple(envs["board"].shape) != (t.num_envs, t.game.num_cells):
        raise CheckpointError(f"checkpoint has {envs['board'].shape[0]} training games, config has {t.num_envs}")
    saved_on = "cuda" if "device" in s["rng"] else "cpu"
    if saved_on != ("cuda" if xp.is_torch else "cpu"):
        raise CheckpointError(f"this run was trained with device={saved_on}; resume it with device={saved_on}")
    load_games_state(t.games, xp, envs, games)
    for name in t.arrays:
        if name in TRACE_ARRAYS and name not in envs:  # td_lambda turned on at resume: traces start now
            continue
        saved = envs[name] if name in envs else envs["kind"]  # older checkpoints name it "kind"
        getattr(t, name)[games] = xp.asarray(saved.numpy())
    for part in t.parts:
        part.load_state_dict(s, r)
    _load_streams(t, s["rng"], r)


def _load_streams(t, saved: dict, r: int) -> None:
    if t.xp.is_torch:
        t.rngs[r].set_state(saved["device"])
    else:
        t.rngs[r].bit_generator.state = saved["numpy"]
    torch.set_rng_state(saved["torch"])
    random.setstate(saved["python"])
