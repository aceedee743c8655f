"""Shared fixtures: compose the real Hydra configs, shrunk, with outputs under tmp_path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


@pytest.fixture(scope="session")
def experiment_script():
    """``experiment_script(name)``: the module ``experiments/<name>.py`` (a script, not a package), loaded
    once per session."""
    loaded = {}

    def load(name: str):
        if name not in loaded:
            spec = importlib.util.spec_from_file_location(name, EXPERIMENTS / f"{name}.py")
            loaded[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded[name])
        return loaded[name]

    return load


@pytest.fixture
def dqn_checkpoint(tmp_path):
    """``dqn_checkpoint(board="3x3", bias=True)``: an untrained ``dqn`` checkpoint (a small structured network,
    torch seed 0) on ``board``, ``checkpoint.pt`` in a run folder of its own under tmp_path; returns its path."""
    import torch
    from omegaconf import OmegaConf

    from ttt.checkpoint import save_checkpoint
    from ttt.games import make_game
    from ttt.nets.structured import build_value_net

    def make(board: str = "3x3", bias: bool = True) -> Path:
        network = {"kind": "structured", "detectors": 2, "hidden": [8], "bias": bias}
        torch.manual_seed(0)
        net = build_value_net(OmegaConf.create(network), make_game(board))
        path = tmp_path / f"dqn_{board}_{'bias' if bias else 'nobias'}" / "checkpoint.pt"
        return save_checkpoint(path, {"kind": "dqn", "game": board, "network": network, "weights": net.state_dict()})

    return make


@pytest.fixture
def compose_train(tmp_path):
    """compose_train(overrides) -> the composed training config with run_dir under tmp_path, on the CPU
    (tests of the device code path pass the device to ``Run`` themselves)."""
    from ttt.harness.learners import register_configs

    register_configs()

    def _compose(overrides: list[str] = ()):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            # device=cpu: the exact figures and same-seed tests mean the same on a machine with a GPU
            return compose("train", overrides=[f"run_dir={tmp_path / 'run'}", "progress=false", "device=cpu",
                                               *overrides])

    yield _compose
    GlobalHydra.instance().clear()


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Every test runs with one torch thread (tiny networks: a second thread only adds contention on a
    busy machine) and leaves torch's thread count as it found it (``train()`` sets it from ``threads``)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="session")
def solved_table_cache(tmp_path_factory):
    """Exact tables (``ttt.games.solved``) are cached in a temporary folder, not the user's cache."""
    import os

    before = os.environ.get("TTT_CACHE_DIR")
    os.environ["TTT_CACHE_DIR"] = str(tmp_path_factory.mktemp("ttt_cache"))
    yield Path(os.environ["TTT_CACHE_DIR"])
    if before is None:
        os.environ.pop("TTT_CACHE_DIR", None)
    else:
        os.environ["TTT_CACHE_DIR"] = before
