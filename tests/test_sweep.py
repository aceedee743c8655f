"""Multiruns through Hydra's launcher plugins (the ``sweep`` extra): joblib on one machine, SLURM config."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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
    from ttt.harness.curves import find_runs, group_runs

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


# ------------------------------------------------------------------ a multirun stopped by a signal sent to the command
def training_sweep(sweep: Path, seeds: str) -> tuple[subprocess.Popen, list[int]]:
    """A joblib multirun of 3x3 dqn jobs with a million episodes each, once two of them train; and the
    pids of the command's children then (the workers and the launcher's resource trackers)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ttt.train", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
         "+experiment=dqn_33", f"seed={seeds}", "episodes=1000000", "eval_every=0", "num_envs=4", "progress=false",
         "log_every=100", f"hydra.sweep.dir={sweep}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
        start_new_session=True)  # a process group of its own, as a command started in a terminal
    deadline = time.time() + 180
    while time.time() < deadline:
        logs = list(sweep.glob("*/train.log"))
        if len(logs) == 2 and all("episodes/s" in p.read_text() for p in logs):
            break
        time.sleep(0.2)
    children = [int(pid) for task in Path(f"/proc/{proc.pid}/task").iterdir()
                for pid in (task / "children").read_text().split()]
    return proc, children


def stop_and_check(proc: subprocess.Popen, children: list[int], seconds: float) -> str:
    """Wait for the command (at most ``seconds``): exit status 130 and no traceback; no child of it left.
    Returns its stderr."""
    try:
        _, err = proc.communicate(timeout=seconds)
        deadline = time.time() + 15  # the resource trackers end when they see the command gone
        while time.time() < deadline and any(Path(f"/proc/{pid}").exists() for pid in children):
            time.sleep(0.1)
        assert [pid for pid in children if Path(f"/proc/{pid}").exists()] == []
    finally:
        for pid in [proc.pid, *children]:  # whatever is left of a failed test
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    return err


# two jobs train ~20 s after the start on 2 busy cores, and stop within seconds
@pytest.mark.cli
@pytest.mark.slow
@pytest.mark.parametrize("to, signum", [("command", signal.SIGINT), ("command", signal.SIGTERM),
                                        ("group", signal.SIGINT)])
def test_a_signal_to_a_joblib_multirun_saves_each_job_and_skips_the_jobs_not_begun(tmp_path, to, signum):
    sweep = tmp_path / "sweep"
    proc, children = training_sweep(sweep, "0,1,2")  # the third job waits for a worker
    if to == "command":
        os.kill(proc.pid, signum)  # as `kill -INT PID`
    else:
        os.killpg(proc.pid, signum)  # as Ctrl-C in a terminal: its process group
    err = stop_and_check(proc, children, 60)
    saved = sorted(p.parent.name.split("_")[0] for p in sweep.glob("*/checkpoint.pt"))
    assert saved == ["0", "1"] and err.count(f"stopped by {signum.name} at episode ") == 2, err[-2000:]
    assert "the multirun was stopped before this job began; not started" in err
    assert sorted(p.name.split("_")[0] for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]  # nothing of job 2
    assert list(sweep.rglob("train.lock")) == []


# as above, ~25 s
@pytest.mark.cli
@pytest.mark.slow
def test_a_second_sigint_stops_the_jobs_at_once_and_leaves_no_worker(tmp_path):
    sweep = tmp_path / "sweep"
    proc, children = training_sweep(sweep, "0,1")
    proc.send_signal(signal.SIGINT)
    for line in proc.stderr:  # the first one handled: two signals at once would be one
        if "waiting for the jobs to save" in line:
            break
    proc.send_signal(signal.SIGINT)
    err = stop_and_check(proc, children, 40)
    assert "SIGINT again; stopping the jobs at once" in err
    assert list(sweep.rglob("train.lock")) == []  # each job gave its lock back before its worker ended


# two tiny jobs side by side, ~20 s on 2 busy cores
@pytest.mark.cli
@pytest.mark.slow
def test_a_job_refused_at_its_start_leaves_the_other_jobs_to_finish_and_the_sweep_fails(tmp_path):
    # joblib killed the other jobs when one exited with 2: job 1 lost its run and left its train.lock
    sweep = tmp_path / "sweep"
    (sweep / "0").mkdir(parents=True)
    (sweep / "0" / "train.log").write_text("an earlier run\n")  # passes the sweep's checks, refused at the job's start
    done = subprocess.run(
        [sys.executable, "-m", "ttt.train", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
         "+experiment=dqn_33", "seed=0,1", "episodes=20", "eval_every=0", "eval_games=2", "agent.final_eval_games=2",
         "num_envs=4", "progress=false", f"hydra.sweep.dir={sweep}", "hydra.sweep.subdir=${hydra.job.num}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1, done.stderr[-2000:]
    refused = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert refused == [f"error: run_dir {sweep / '0'} holds train.log of an earlier run but no checkpoint; "
                       "overwrite=true starts over (deleting them), or choose another run_dir"]
    summary = "ttt.train: job 0 of the sweep ended with exit status 2 (its error is above); the other jobs ran"
    assert summary in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in (sweep / "0").iterdir()) == ["train.log"]
    assert json.loads((sweep / "1" / "final_eval.json").read_text())["episodes"] == 20
    assert list(sweep.rglob("train.lock")) == []


def test_a_job_stopped_by_a_signal_returns_and_the_next_jobs_of_its_worker_are_skipped(monkeypatch, capsys):
    from ttt.cli import Interrupted
    from ttt.harness import multirun

    monkeypatch.setattr(multirun, "is_job", lambda: True)  # as in a worker of a joblib multirun
    monkeypatch.setattr(multirun, "join_jobs", lambda: None)
    monkeypatch.setattr(multirun, "_skip", False)

    def saved_and_stopped():
        raise Interrupted()

    assert multirun.run_job(saved_and_stopped) is None  # no SystemExit: joblib would kill the jobs still saving
    ran = []
    assert multirun.run_job(ran.append, 1) is None and ran == []
    assert capsys.readouterr().err == "ttt.train: the multirun was stopped before this job began; not started\n"
    monkeypatch.setattr(multirun, "_skip", False)
    # an error is the job's alone: Hydra records it as failed, no SystemExit makes joblib kill the other jobs
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    monkeypatch.setattr(HydraConfig, "get", staticmethod(lambda: OmegaConf.create({"job": {"num": 3}})))
    with pytest.raises(multirun.JobFailed, match=r"^ttt.train: job 3 of the sweep ended with exit status 2 "):
        multirun.run_job(lambda: int("x"))
    assert capsys.readouterr().err.startswith("error: invalid literal for int()")
    assert multirun.run_job(ran.append, 2) is None and ran == [2]  # the worker's next job runs


def test_slurm_launcher_config_sets_partition_gpus_cpus_and_time():
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from ttt.harness.learners import register_configs

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
