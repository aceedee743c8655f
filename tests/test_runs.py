"""Long runs that never lose work: protected run folders, one run per folder, Ctrl-C saves, one-line
errors, every value checked before work starts, resume compared with the checkpoint's config, sweeps
that resume, and the one evaluation / checkpoint / log schedule of ttt.harness.training.Run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ttt.checkpoint import CheckpointError, load_checkpoint
from ttt.cli import Interrupted, run_cli
from ttt.config import ConfigError
from ttt.harness.run_dir import ASIDE, LOCK_NAME, RunLock, hydra_value
from ttt.harness.training import Run
from ttt.players import make_player
from ttt.train import train

ROOT = Path(__file__).resolve().parents[1]
TINY = ["+experiment=dqn_33", "episodes=40", "eval_every=20", "eval_games=4", "agent.final_eval_games=4",
        "num_envs=4", "agent.switch_episode=20"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ttt.train", *args]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ---------------------------------------------------------------------------------- 1. no silent overwrite
def test_a_second_run_into_a_used_run_dir_is_refused_and_the_checkpoint_is_untouched(compose_train, tmp_path,
                                                                                     capsys):
    run = tmp_path / "run"
    train(compose_train(TINY))
    before = (run / "checkpoint.pt").read_bytes()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "seed=1"]))
    assert exit_info.value.code == 2
    line = _one_error_line(capsys)
    assert str(run) in line and "resume=true" in line and "overwrite=true" in line
    assert (run / "checkpoint.pt").read_bytes() == before
    assert not (run / LOCK_NAME).exists()


def test_overwrite_starts_over(compose_train, tmp_path, capsys):
    run = tmp_path / "run"
    train(compose_train(TINY))
    capsys.readouterr()
    out = train(compose_train([*TINY, "episodes=20", "overwrite=true"]))
    assert out["episodes"] == 20 and load_checkpoint(run / "checkpoint.pt")["episodes"] < 40
    assert "overwrite=true: deleted the earlier run's checkpoint.pt" in capsys.readouterr().err
    log = (run / "train.log").read_text()
    assert "[#" in log and "/40 " not in log  # the earlier run's progress lines (of 40 episodes) are gone


# ---------------------------------------------------------------------------------- 2. one run per folder
def _run_files(run: Path) -> dict[str, bytes]:
    """Every file of a run folder (tb/ and .hydra/ included), as bytes."""
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("when", ["outputs in", "training begins", "a few steps in"])
def test_a_signal_before_the_first_checkpoint_of_an_overwriting_start_keeps_the_earlier_run(
        compose_train, tmp_path, capsys, monkeypatch, when):
    run = tmp_path / "run"
    train(compose_train(TINY))
    before = _run_files(run)
    capsys.readouterr()
    stop = lambda: os.kill(os.getpid(), signal.SIGTERM)  # noqa: E731
    if when == "outputs in":  # the line that says where the outputs go, before the learner sets up
        say = Run.say
        monkeypatch.setattr(Run, "say", lambda self, text, *a: (say(self, text, *a), "outputs in" in text and stop()))
    else:
        start, tick = Run.start, Run.tick
        steps = [0]

        def ticking(self, *args, **kwargs):
            steps[0] += 1
            if when == "a few steps in" and steps[0] == 3:
                stop()
            return tick(self, *args, **kwargs)

        monkeypatch.setattr(Run, "start", lambda self, *a, **k: (start(self, *a, **k), when == "training begins"
                                                                  and stop()))
        monkeypatch.setattr(Run, "tick", ticking)
    with pytest.raises(SystemExit) as exit_info:  # eval_every=20: the first checkpoint would come at 20
        run_cli(train, compose_train([*TINY, "overwrite=true", "episodes=400", "eval_every=200"]))
    err = capsys.readouterr().err
    assert exit_info.value.code == 130 and "deleted" not in err, err
    assert _run_files(run) == before and not (run / ASIDE).exists()
    if when != "outputs in":
        assert "before this run's first checkpoint; the earlier run is back in place" in err


def _hydra_train(monkeypatch, *overrides: str) -> int:
    """``python -m ttt.train OVERRIDES`` in this process (Hydra's job, its record of the job and the
    callbacks included); returns the exit code."""
    import hydra

    from ttt.harness.learners import register_configs

    register_configs()

    @hydra.main(version_base="1.3", config_path=str(ROOT / "configs"), config_name="train")
    def main(cfg) -> None:  # ttt.train's main, with its configs found from here
        run_cli(train, cfg)

    # Hydra's logging left out: its dictConfig would close the handlers that earlier tests left on
    # pytest's captured streams
    monkeypatch.setattr(sys, "argv", ["ttt.train", *overrides, "hydra/job_logging=none", "hydra/hydra_logging=none"])
    try:
        main()
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def test_a_refused_start_leaves_the_runs_record_of_its_command_as_it_was(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    tiny = [*TINY, "progress=false", "device=cpu", "eval_opponents=[random]", f"run_dir={run}"]
    assert _hydra_train(monkeypatch, *tiny) == 0
    record = {name: (run / ".hydra" / name).read_text() for name in ("config.yaml", "hydra.yaml", "overrides.yaml")}
    assert "network: structured_deep" not in record["overrides.yaml"] and "seed=0" not in record["overrides.yaml"]
    refused = [["resume=true", "network=mlp_deep"], ["overwrite=true", "seed=-1"], ["resume=true", "game=4x4"],
               ["resume=true", "episodes=20"], ["overwrite=true", "num_envs=0"]]
    for extra in refused:
        assert _hydra_train(monkeypatch, *tiny, *extra) == 2, extra
    # a second start turned away by the lock of a live run
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run / LOCK_NAME).write_text(json.dumps({"pid": sleeper.pid, "host": socket.gethostname(), "started": "x"}))
        assert _hydra_train(monkeypatch, *tiny, "overwrite=true", "seed=5") == 2
    finally:
        sleeper.kill()
        sleeper.wait()
    assert {name: (run / ".hydra" / name).read_text() for name in record} == record, capsys.readouterr().err
    # a start that goes ahead records its command once it has its first checkpoint
    (run / LOCK_NAME).unlink()
    assert _hydra_train(monkeypatch, *tiny, "overwrite=true", "seed=5") == 0
    assert "seed=5" in (run / ".hydra" / "overrides.yaml").read_text()


@pytest.mark.cli
def test_a_live_lock_refuses_a_second_run_and_a_stale_one_is_replaced(compose_train, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    lock = run / LOCK_NAME
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(json.dumps({"pid": sleeper.pid, "host": socket.gethostname(), "started": "x"}))
        with pytest.raises(ConfigError, match=f"in use by another training \\(pid {sleeper.pid}"):
            train(compose_train(TINY))
        assert json.loads(lock.read_text())["pid"] == sleeper.pid  # the other run's lock stays
        assert not (run / "tb").exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    # its process is gone: the lock is stale, the run goes ahead, and releases its own lock at the end
    train(compose_train(TINY))
    assert (run / "final_eval.json").is_file() and not lock.exists()


@pytest.mark.parametrize("pid", [10**30, -1, 0, "x"])
def test_a_lock_holding_no_possible_pid_is_stale_and_replaced_with_a_note(tmp_path, pid):
    lock = tmp_path / LOCK_NAME
    lock.write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started": "x"}))
    held = RunLock(tmp_path)
    note = held.acquire()
    assert note == f"removed a stale lock {lock} (it holds no process id: pid {pid!r})"
    assert json.loads(lock.read_text())["pid"] == os.getpid()
    held.release()
    assert not lock.exists()


# ------------------------------------------------------------ 3. Ctrl-C saves; checkpoints whatever eval_every is
# one interpreter start, a few seconds of Qubic training, one in-process resume: ~10 s on an idle 2-core machine
@pytest.mark.cli
def test_sigint_saves_a_checkpoint_prints_how_to_resume_and_resume_finishes(compose_train, tmp_path):
    run = tmp_path / "qubic"
    args = ["game=4x4x4", "num_envs=16", "episodes=1000000", "eval_every=2000000", "eval_games=2",
            "agent.final_eval_games=2", "log_every=16", f"run_dir={run}"]
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(_command(*args, "progress=false"), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=err, env=ENV)
    log = run / "train.log"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and "episodes/s" not in (
            log.read_text() if log.is_file() else ""):
        time.sleep(0.1)
    assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()[-2000:]
    # 2. a second training into the folder while the first runs is refused, and changes nothing
    with pytest.raises(ConfigError, match=f"in use by another training \\(pid {proc.pid}"):
        train(compose_train(args))
    assert not (run / "checkpoint.pt").exists()  # eval_every is beyond the run: nothing saved yet
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in stderr and "SIGINT received" in stderr
    ckpt = run / "checkpoint.pt"
    payload = load_checkpoint(ckpt, kind="dqn", game="4x4x4")
    saved = payload["episodes"]
    assert f"stopped by SIGINT at episode {saved} of 1000000; checkpoint saved: {ckpt}" in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("ttt.train: resume with: python -m ttt.train ") and last.endswith(
        f"run_dir={run} resume=true")
    assert not (run / LOCK_NAME).exists() and not (run / "final_eval.json").exists()
    # resume continues from the checkpoint (episodes may grow or shrink to no less than were played)
    out = train(compose_train([*args, "resume=true", f"episodes={saved + 16}"]))
    assert out["episodes"] == saved + 16
    assert load_checkpoint(ckpt)["episodes"] >= saved + 16


def test_checkpoints_come_every_checkpoint_every_episodes_even_without_evaluations(compose_train, tmp_path):
    # the case that lost 18,700 games: eval_every beyond the run wrote no checkpoint before the end
    saved = []
    cfg = compose_train([*TINY, "eval_every=0", "checkpoint_every=8", "checkpoint_minutes=0", "num_envs=1"])
    import ttt.agents.dqn.loop as dqn

    real = dqn.save_checkpoint
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dqn, "save_checkpoint",
                   lambda path, payload: saved.append(payload["episodes"]) or real(path, payload))
        train(cfg)
    assert saved == [8, 16, 24, 32, 40]


@pytest.mark.parametrize("steps, want", [
    # the checkpoint of an evaluation comes before it (a signal during the evaluation then stops at once)
    (range(1, 13), [("log", 2), ("save", 3), ("log", 4), ("save", 4), ("eval", 4), ("log", 6), ("save", 6),
                    ("log", 8), ("save", 8), ("eval", 8), ("save", 9), ("log", 10), ("log", 12), ("save", 12),
                    ("eval", 12)]),  # one game per step (tabular learners)
    ([5, 10, 12], [("log", 5), ("save", 5), ("eval", 5), ("log", 10), ("save", 10), ("eval", 10), ("log", 12),
                   ("save", 12), ("eval", 12)]),  # several games per step (batched learners)
])
def test_one_schedule_for_per_game_and_batched_learners(compose_train, tmp_path, steps, want):
    cfg = compose_train(["game=3x3", "episodes=12", "eval_every=4", "checkpoint_every=3", "log_every=2",
                         "checkpoint_minutes=0", "eval_games=2", "eval_opponents=[random]"])
    events: list[tuple[str, int]] = []
    with Run(cfg, tmp_path / "run") as run:
        player = make_player("random", run.game)
        run.evaluate = lambda p, done, games=None, *rest: events.append(("eval", done)) or {}
        run.start(0)
        for done in steps:
            run.tick(done, lambda: player, lambda d: events.append(("save", d)),
                     lambda d: events.append(("log", d)) or "")
        run.finish(lambda: player, 12, lambda d: events.append(("save", d)))
    assert events == want


def test_a_checkpoint_after_checkpoint_minutes_and_a_stop_saves_after_the_step(compose_train, tmp_path, capsys):
    cfg = compose_train(["game=3x3", "episodes=100", "eval_every=0", "checkpoint_minutes=0.001"])
    saves: list[int] = []
    with pytest.raises(Interrupted), Run(cfg, tmp_path / "r") as run:
        player = make_player("random", run.game)
        run.start(0)
        run.tick(1, lambda: player, saves.append)
        assert saves == []
        time.sleep(0.08)  # 0.001 minutes = 60 ms
        run.tick(2, lambda: player, saves.append)
        assert saves == [2]
        run._on_signal(signal.SIGTERM, None)  # as the signal would
        assert saves == [2]  # nothing happens inside the handler: the step finishes first
        run.tick(3, lambda: player, saves.append)
    assert saves == [2, 3]
    err = capsys.readouterr().err
    assert "stopped by SIGTERM at episode 3 of 100" in err and "resume=true" in err.splitlines()[-1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored


# ---------------------------------------------------------------------- 4, 5. one line, before any work
@pytest.mark.parametrize("overrides, message", [
    (["num_envs=0"], "num_envs=0: must be >= 1"),
    (["num_envs=-3"], "num_envs=-3: must be >= 1"),
    (["seed=-1"], "seed=-1: must be in [0, 4294967295]"),
    (["seed=4294967296"], "seed=4294967296: must be in [0, 4294967295]"),
    (["seed=1180591620717411303424"], "seed=1180591620717411303424: must be in [0, 4294967295]"),
    (["threads=0"], "threads=0: must be in [1, "),
    (["threads=100000000000"], "threads=100000000000: must be in [1, "),
    (["run_dir="], "run_dir='' names no folder"),
    (["episodes=-5"], "episodes=-5: must be >= 1"),
    (["episodes=0"], "episodes=0: must be >= 1"),
    (["agent.epsilon=5"], "agent.epsilon=5.0: must be in [0, 1]"),
    (["agent.gamma=-3"], "agent.gamma=-3.0: must be in [0, 1]"),
    (["agent.lr=0"], "agent.lr=0.0: must be > 0"),
    (["+episods=100"], "unknown key episods (did you mean episodes?)"),
    (["+agent.lrr=0.1"], "unknown key agent.lrr (did you mean agent.lr?)"),
    (["resume=true", "overwrite=true"], "resume=true and overwrite=true: choose one"),
    (["eval_opponents=[random,gandalf]"], "eval_opponents: unknown player 'gandalf'"),
    (["eval_opponents=[random,benchmark,random]"], "eval_opponents lists a player twice (random); list each once"),
    (["game=4x4x4", "eval_opponents=[perfect]"], "eval_opponents: perfect play is available on"),
    (["+experiment=vi_33", "game=4x4x4"], "value_iteration: board 4x4x4 has 64 cells"),
    (["+experiment=qlearn_33", "agent.storage=huge"], "agent.storage='huge': choose one of auto, dense, sparse"),
    (["+experiment=td_33_boltzmann", "agent.tau_end=0"], "agent.tau_end=0.0: must be > 0"),
    (["+experiment=alphazero_33", "agent.simulations=0"], "agent.simulations=0: must be >= 1"),
    (["network.hidden=[0]"], "network.hidden[0]=0"),
])
def test_bad_values_fail_before_any_work_with_one_line_and_no_folder(compose_train, tmp_path, capsys, overrides,
                                                                     message):
    cfg = compose_train(overrides if overrides[0].startswith("+experiment") else [*TINY, *overrides])
    t0 = time.perf_counter()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, cfg)
    assert time.perf_counter() - t0 < 10
    assert exit_info.value.code == 2
    assert message in _one_error_line(capsys)
    assert not (tmp_path / "run").exists()  # a run that failed at start leaves no folder


def test_full_errors_show_the_traceback(compose_train, monkeypatch):
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(ConfigError, match="num_envs=0"):
        run_cli(train, compose_train([*TINY, "num_envs=0"]))


def test_a_run_dir_that_is_a_file_or_not_writable(compose_train, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("keep")
    for run_dir, message in ((blocker, "is a file, not a folder"), (blocker / "sub", "is not writable")):
        with pytest.raises(SystemExit) as exit_info:
            run_cli(train, compose_train([*TINY, f"run_dir={run_dir}"]))
        assert exit_info.value.code == 2
        line = _one_error_line(capsys)
        assert f"run_dir {run_dir} {message}" in line
    assert blocker.read_text() == "keep"


def test_a_folder_holding_other_files_is_kept_after_a_failed_start(compose_train, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError):
        train(compose_train([*TINY, "eval_opponents=[gandalf]"]))
    assert (run / "notes.txt").read_text() == "mine"


# ------------------------------------------------------------------------- 5. resume compares the config
@pytest.mark.parametrize("overrides, error, message", [
    (["agent.lr=0.003"], ConfigError, "agent.lr 0.002 -> 0.003"),
    (["network=mlp_deep"], ConfigError, "network.kind structured -> mlp"),
    (["game=4x4"], CheckpointError, "trained on board '3x3', not '4x4'"),
    (["seed=3"], ConfigError, "seed 0 -> 3"),
    (["episodes=10"], ConfigError, "episodes=10 is fewer"),
])
def test_resume_with_settings_that_change_the_result_is_refused_naming_them(compose_train, tmp_path, capsys,
                                                                          overrides, error, message):
    run = tmp_path / "run"
    train(compose_train(TINY))
    before = (run / "checkpoint.pt").read_bytes()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "resume=true", *overrides]))
    assert exit_info.value.code == 2
    assert message in _one_error_line(capsys)
    with pytest.raises(error):
        train(compose_train([*TINY, "resume=true", *overrides]))
    assert (run / "checkpoint.pt").read_bytes() == before and (run / "final_eval.json").is_file()


def test_resume_with_a_checkpoint_of_another_learner_is_refused(compose_train, tmp_path, capsys):
    train(compose_train(TINY))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train(["+experiment=qlearn_33", "episodes=40", "resume=true"]))
    assert exit_info.value.code == 2
    assert "checkpoint.pt: a 'dqn' checkpoint, expected 'q_learning'" in _one_error_line(capsys)


def test_resume_may_grow_episodes_and_change_what_is_measured(compose_train, tmp_path, capsys):
    run = tmp_path / "run"
    train(compose_train([*TINY, "eval_every=0"]))
    capsys.readouterr()
    # finished with these episodes: skipped with one line
    assert train(compose_train([*TINY, "eval_every=0", "resume=true"]))["episodes"] == 40
    assert capsys.readouterr().err == f"ttt.train: {run} has finished (40 episodes, final_eval.json); skipped\n"
    out = train(compose_train([*TINY, "eval_every=0", "resume=true", "episodes=60", "eval_games=6"]))
    err = capsys.readouterr().err
    assert "changed: episodes 40 -> 60; eval_games 4 -> 6" in err
    assert out["episodes"] == 60 and load_checkpoint(run / "checkpoint.pt")["episodes"] >= 60


# ------------------------------------------------------------------------------------ 7. feedback
def test_first_and_last_lines_name_the_outputs_and_train_log_holds_the_progress(compose_train, tmp_path, capsys):
    run = tmp_path / "run"
    train(compose_train([*TINY, "progress=true"]))
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("ttt.train: dqn on 3x3; outputs in ") and f"{run}/" in lines[0]
    assert lines[-1].startswith("ttt.train: done in ") and f"outputs in {run}/: checkpoint.pt, final_eval.json, " \
                                                         f"tb/, train.log" in lines[-1]
    log = (run / "train.log").read_text().splitlines()
    assert len(log) == len(lines) and all(line.endswith(printed) for line, printed in zip(log, lines, strict=True))
    assert any("episodes/s" in line for line in log) and any("final evaluation" in line for line in log)


# --------------------------------------------------------------------- the bar commands, through Hydra
# one interpreter start each (~3 s on an idle machine); the values themselves are checked in-process above
@pytest.mark.parametrize("override, message", [
    ("num_envs=0", "num_envs=0: must be >= 1"),
    pytest.param("episodes=-5", "episodes=-5: must be >= 1", marks=pytest.mark.slow),
    pytest.param("eval_opponents=[gandalf]", "eval_opponents: unknown player 'gandalf'", marks=pytest.mark.slow),
    ("run_dir=FILE", "is a file, not a folder"),  # checked before Hydra creates the folder
])
@pytest.mark.cli
def test_bar_commands_fail_within_seconds_with_one_line(tmp_path, override, message):
    (tmp_path / "FILE").write_text("")
    run_dir = f"run_dir={tmp_path / 'run'}" if override != "run_dir=FILE" else ""
    t0 = time.time()
    args = ["+experiment=dqn_33", override.replace("FILE", str(tmp_path / "FILE")), *([run_dir] if run_dir else [])]
    done = subprocess.run(_command(*args), cwd=tmp_path, capture_output=True, text=True,
                          env={**ENV, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert time.time() - t0 < 60  # an interpreter start; no training (which took minutes before)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and message in done.stderr
    assert not (tmp_path / "run").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]


# -------------------------------------------------------------------------------- resuming a sweep
# two interpreter starts and four tiny runs: ~10 s on an idle 2-core machine
@pytest.mark.cli
def test_a_sweep_run_again_with_resume_skips_finished_jobs_and_continues_the_others(compose_train, tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", "+experiment=dqn_33", "seed=0,1", "episodes=40", "eval_every=0", "eval_games=2",
            "agent.final_eval_games=2", "num_envs=4", "progress=false", f"hydra.sweep.dir={sweep}"]
    first = subprocess.run(_command(*args), cwd=ROOT, capture_output=True, text=True, env=ENV, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    job0, job1 = sorted(p for p in sweep.iterdir() if p.is_dir())
    before = (job0 / "checkpoint.pt").read_bytes()
    # job 1 stopped at 20 episodes: its checkpoint is replaced by one of the same settings at 20
    (job1 / "final_eval.json").unlink()
    train(compose_train(["+experiment=dqn_33", "seed=1", "episodes=20", "eval_every=0", "eval_games=2",
                         "agent.final_eval_games=2", "num_envs=4", f"run_dir={hydra_value(str(job1))}",
                         "overwrite=true"]))
    (job1 / "final_eval.json").unlink()
    again = subprocess.run(_command(*args, "resume=true"), cwd=ROOT, capture_output=True, text=True, env=ENV,
                           timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert [line for line in again.stderr.splitlines() if str(job0) in line] == [
        f"ttt.train: {job0} has finished (40 episodes, final_eval.json); skipped"]
    assert f"resumed {job1 / 'checkpoint.pt'} at episode 20" in again.stderr
    assert (job0 / "checkpoint.pt").read_bytes() == before
    assert json.loads((job1 / "final_eval.json").read_text())["episodes"] == 40
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == [job0.name, job1.name]


def test_progress_lines_stop_the_counter_at_the_target_say_the_time_left_and_follow_the_evaluations(
        compose_train, tmp_path):
    import re

    # 3 games side by side end past 10; a fresh evaluation line for each opponent
    train(compose_train(["game=3x3", "episodes=10", "num_envs=3", "eval_every=4", "eval_games=6", "log_every=1",
                         "agent.final_eval_games=4", "eval_opponents=[random,benchmark]"]))
    log = (tmp_path / "run" / "train.log").read_text()
    counts = [(int(a), int(b)) for a, b in re.findall(r"\] (\d+)/(\d+)", log)]
    assert counts and all(done <= total == 10 for done, total in counts)
    assert "in flight)" in log or counts[-1][0] == 10
    assert "final evaluation: random 0/4 games" in log and "final evaluation: benchmark 0/4 games" in log
    assert "evaluation: random 0/6 games" in log


def test_time_left_is_the_games_to_go_at_the_mean_rate_since_training_began(compose_train, tmp_path):
    with Run(compose_train(["game=3x3", "episodes=100", "eval_games=2", "eval_opponents=[random]"]),
             tmp_path / "run") as run:
        run.start(20)
        now = run._train_start[0] + 30.0  # 30 s for 20 games: 60 games to go take 90 s
        assert run._time_left(40, now) == " ~1 min 30 s left"
        assert run._time_left(100, now) == "" and run._time_left(20, now) == ""


def test_a_refused_first_run_leaves_no_empty_folders_above_its_own(compose_train, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "other").mkdir(parents=True)  # a folder with something in it stays
    for where in ("runs/dqn_3x3/2026-01-01_00-00-00", "fresh/dqn_3x3/2026-01-01_00-00-00"):
        (tmp_path / where / ".hydra").mkdir(parents=True)  # as Hydra makes a job's folder before the job
        with pytest.raises(ConfigError):
            train(compose_train([*TINY, f"run_dir={where}", "num_envs=0"]))
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["runs", "runs/other"]


def test_a_run_resumed_at_an_evaluation_point_evaluates_it_again(compose_train, tmp_path):
    # resuming drops the TensorBoard events from the checkpoint's episode on, and the checkpoint is
    # written before its evaluation: without evaluating again, the test point at 10 would be lost
    from ttt.harness.curves import read_run

    args = ["+experiment=td_33_boltzmann", "episodes=10", "eval_every=10", "eval_games=4", "eval_opponents=[random]"]
    train(compose_train(args))
    train(compose_train([*args, "episodes=30", "resume=true"]))
    assert "evaluated again (resumed at an evaluation point)" in (tmp_path / "run" / "train.log").read_text()
    steps = read_run(tmp_path / "run" / "tb").curves["eval/random/score"].steps.tolist()
    assert steps == [10, 20, 30]


# ------------------------------------------------------------------- a run folder keeps its meaning
def _refused(capsys, function, cfg) -> str:
    """``function(cfg)`` through ``run_cli``: exit code 2 and one line; returns the line."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(function, cfg)
    assert exit_info.value.code == 2
    return _one_error_line(capsys)


@pytest.mark.parametrize("resume", [["resume=true"], []])
def test_runs_side_by_side_into_a_single_runs_folder_are_refused(compose_train, tmp_path, capsys, resume):
    run = tmp_path / "run"
    train(compose_train(TINY))
    before = _run_files(run)
    line = _refused(capsys, train, compose_train([*TINY, "seeds=2", *resume]))
    assert f"seeds=2: run_dir {run} holds a single run (checkpoint.pt, final_eval.json, train.log, tb/)" in line
    assert _run_files(run) == before and not list(run.glob("seed_*"))


def test_a_groups_folder_keeps_its_layout_and_its_seeds(compose_train, tmp_path, capsys):
    run = tmp_path / "run"
    group = [*TINY, "seeds=2", "eval_every=0"]
    train(compose_train(group))
    before = _run_files(run)
    assert sorted(p.name for p in run.iterdir()) == ["seed_0", "seed_1"]
    for overrides, message in (
            (["resume=true"], f"run_dir {run} holds runs side by side (seed_0/, seed_1/); a single run would be "
                              f"filed with them: continue them with seed=0 seeds=2"),
            ([], "holds runs side by side (seed_0/, seed_1/)"),
            (["overwrite=true"], "holds runs side by side (seed_0/, seed_1/)"),
            (["seeds=3", "resume=true"], f"seed=0 seeds=3: run_dir {run} holds the runs side by side of seed=0 "
                                         f"seeds=2; a group keeps its seeds"),
            (["seeds=2", "seed=1", "overwrite=true"], "seed=1 seeds=2: run_dir"),
    ):
        args = [*TINY, "eval_every=0", *overrides]
        assert message in _refused(capsys, train, compose_train(args)), overrides
    assert _run_files(run) == before
    # the group as it was started resumes (finished: skipped)
    assert sorted(train(compose_train([*group, "resume=true"]))["runs"]) == [0, 1]


@pytest.mark.parametrize("resume", [["resume=true"], []])
def test_an_earlier_runs_results_without_its_checkpoint_are_refused_unless_overwrite(compose_train, tmp_path,
                                                                                   capsys, resume):
    run = tmp_path / "run"
    train(compose_train(TINY))
    (run / "checkpoint.pt").unlink()
    (run / ".hydra").mkdir()
    (run / ".hydra" / "config.yaml").write_text("seed: 0\n")
    before = _run_files(run)
    line = _refused(capsys, train, compose_train([*TINY, "seed=1", *resume]))
    assert f"run_dir {run} holds final_eval.json, train.log, tb/, .hydra/ of an earlier run but no checkpoint" in line
    assert "overwrite=true starts over" in line and _run_files(run) == before
    # overwrite=true: the earlier run's results go, none of them mixed with the new run's
    out = train(compose_train([*TINY, "seed=1", "episodes=20", "overwrite=true"]))
    assert out["episodes"] == 20 and "/40 " not in (run / "train.log").read_text()
    assert len(list((run / "tb").glob("events.out.tfevents.*"))) == 1


def test_checkpoints_of_two_formats_in_one_folder_are_refused_unless_overwrite(compose_train, tmp_path, capsys):
    run = tmp_path / "run"
    qlearn = ["+experiment=qlearn_33", "episodes=20", "eval_every=0", "eval_games=2", "eval_opponents=[random]"]
    train(compose_train(qlearn))
    os.rename(run / "checkpoint.npz", tmp_path / "checkpoint.npz")
    (run / "final_eval.json").unlink()
    train(compose_train([*TINY, "overwrite=true"]))
    os.rename(tmp_path / "checkpoint.npz", run / "checkpoint.npz")  # a q_learning checkpoint beside dqn's
    before = _run_files(run)
    for args in ([*qlearn, "resume=true", "episodes=40"], [*TINY, "resume=true", "episodes=60"], qlearn):
        line = _refused(capsys, train, compose_train(args))
        assert f"run_dir {run} holds both checkpoint.pt and checkpoint.npz, checkpoints of two runs" in line
    assert _run_files(run) == before
    train(compose_train([*qlearn, "overwrite=true"]))
    assert (run / "checkpoint.npz").is_file() and not (run / "checkpoint.pt").exists()


def test_a_temporary_checkpoint_left_by_a_sigkill_is_removed_by_the_next_start(compose_train, tmp_path, capsys):
    run = tmp_path / "run"
    train(compose_train(TINY))
    before = (run / "checkpoint.pt").read_bytes()
    # killed while writing the checkpoint: atomic_write's temporary file stays, the checkpoint is whole
    kill = ("import os, signal, sys; from ttt.checkpoint import atomic_write; atomic_write(sys.argv[1], "
            "lambda tmp: (tmp.write_bytes(b'half'), os.kill(os.getpid(), signal.SIGKILL)))")
    done = subprocess.run([sys.executable, "-c", kill, str(run / "checkpoint.pt")],
                          env={**ENV, "PYTHONPATH": str(ROOT)})
    assert done.returncode == -signal.SIGKILL
    (stray,) = run.glob(".checkpoint.*.tmp.pt")
    assert (run / "checkpoint.pt").read_bytes() == before
    capsys.readouterr()
    train(compose_train([*TINY, "resume=true"]))  # finished: skipped, and the folder cleaned
    assert f"removed {stray.name}, left by a run killed while writing" in capsys.readouterr().err
    assert not stray.exists() and (run / "checkpoint.pt").read_bytes() == before


# ------------------------------------------------------------------- a sweep checks every job first
def test_a_sweep_checks_every_jobs_values_before_the_first_job(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweep"
    args = ["-m", *TINY, "progress=false", "device=cpu", f"hydra.sweep.dir={sweep}"]
    for swept, message in ((["seed=0,-1,2", "eval_opponents=[random]"],
                            "job 1 of the sweep (seed=-1): seed=-1: must be in [0, 4294967295]"),
                           (["seed=0,1", "eval_opponents=[random],[random,random]"],
                            "job 1 of the sweep (seed=0 eval_opponents=[random,random]): eval_opponents lists a "
                            "player twice (random)")):
        capsys.readouterr()
        assert _hydra_train(monkeypatch, *args, *swept) == 2
        err = capsys.readouterr().err
        lines = err.splitlines()
        assert len(lines) == 1 and message in lines[0] and "no job was started" in lines[0], err
        assert not sweep.exists()  # no job trained, nor even made its folder
