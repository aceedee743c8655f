"""Multiruns through Hydra's launcher plugins (the ``sweep`` extra): joblib on one machine, SLURM config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hydra_plugins.hydra_joblib_launcher")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def joblib_sweep(tmp_path_factory):
    """A 2-job multirun of a tiny tabular experiment through hydra/launcher=joblib (~8 s on 2 cores)."""
    sweep = tmp_path_factory.mktemp("sweep") / "sweep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ttt.train", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
         "+experiment=td_33_boltzmann", "episodes=200", "eval_every=100", "eval_games=20", "log_every=50",
         "progress=false", "seed=0,1", f"hydra.sweep.dir={sweep}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"})
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-2000:]
    return sweep, out, proc.pid


@pytest.mark.cli
def test_joblib_multirun_runs_each_job_in_a_worker_process(joblib_sweep):
    sweep, out, launcher_pid = joblib_sweep
    assert "Joblib.Parallel(n_jobs=2" in out
    finals = sorted(sweep.glob("*/final_eval.json"))
    assert len(finals) == 2
    assert sorted(json.loads(p.read_text())["episodes"] for p in finals) == [200, 200]
    # TensorBoard names its event file after the writing process: the jobs ran outside the launcher
    pids = {int(f.name.split(".")[-2]) for p in finals for f in (p.parent / "tb").glob("events.out.tfevents.*")}
    assert len(pids) >= 1 and launcher_pid not in pids


@pytest.mark.cli
def test_the_sweep_gives_the_table_and_the_figure(joblib_sweep, tmp_path, experiment_script):
    from ttt.curves import find_runs, group_runs

    sweep, _, _ = joblib_sweep
    groups = group_runs(find_runs(sweep))
    (label,) = groups
    assert label == "+experiment=td_33_boltzmann,episodes=200,eval_every=100,eval_games=20,log_every=50"
    assert sorted(r.seed for r in groups[label]) == [0, 1]

    summarize = experiment_script("summarize")
    (row,) = summarize.summarize(sweep, "eval/random/score", last=2)
    assert (row["trials"], row["points"], sorted(row["seeds"])) == (2, 2, [0, 1])

    pytest.importorskip("matplotlib")
    from ttt.plot import main

    main([str(sweep), "tags=[eval/random/score,eval/benchmark/score]", f"output={tmp_path / 'f.png'}"])
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_slurm_launcher_config_sets_partition_gpus_cpus_and_time():
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from ttt.learners import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("train", overrides=["+experiment=dqn_444_gravity", "hydra/launcher=slurm"],
                      return_hydra_config=True)
        gpu = compose("train", overrides=["+experiment=dqn_444_gravity", "hydra/launcher=slurm",
                                          "hydra.launcher.partition=gpu", "hydra.launcher.gpus_per_node=1",
                                          "hydra.launcher.cpus_per_task=4", "hydra.launcher.timeout_min=600"],
                      return_hydra_config=True)
    GlobalHydra.instance().clear()
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert (launcher.partition, launcher.gpus_per_node, launcher.cpus_per_task, launcher.timeout_min) == (
        None, None, 1, 1440)
    g = gpu.hydra.launcher
    assert (g.partition, g.gpus_per_node, g.cpus_per_task, g.timeout_min) == ("gpu", 1, 4, 600)
