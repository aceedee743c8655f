"""One seed, one result: two training runs with the same seed save identical checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from ttt.checkpoint import load_checkpoint

# learners whose own test files do not already compare two seeded runs
EXPERIMENTS = {
    "qlearn_33": ["episodes=300"],
    "td_33_boltzmann": ["episodes=300"],
}


def _arrays(path) -> dict[str, np.ndarray]:
    return {k: v for k, v in load_checkpoint(path).items() if isinstance(v, np.ndarray)}


def _train(compose_train, experiment: str, seed: int, tag: str):
    from ttt.train import train

    cfg = compose_train([f"+experiment={experiment}", *EXPERIMENTS[experiment], "eval_every=0", "eval_games=10",
                         f"seed={seed}", f"run_dir={tag}"])
    train(cfg)
    return _arrays(f"{cfg.run_dir}/checkpoint.npz")


@pytest.mark.parametrize("experiment", list(EXPERIMENTS))
def test_same_seed_same_tables_other_seed_other_tables(compose_train, tmp_path, experiment):
    a = _train(compose_train, experiment, 0, tmp_path / "a")
    b = _train(compose_train, experiment, 0, tmp_path / "b")
    c = _train(compose_train, experiment, 1, tmp_path / "c")
    assert a.keys() == b.keys() and a
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not all(k in c and np.array_equal(a[k], c[k]) for k in a)  # the seed matters
