"""What every learner's training loop shares: seeding, the run folder, TensorBoard logging, and one schedule
of evaluations, checkpoints, log lines and stops.

A run folder is protected. ``Run(cfg, run_dir)`` checks every value of the config before any work starts
(``check_values``: ``ttt.config.check_train_config``; the memory the games need, ``check_memory``; the evaluation
opponents, which it builds, each listed once; a sweep checks every job's values with it before its first job),
checks that the folder is writable and that nothing in it is in the way, and takes its lock;
``ttt.harness.run_dir.RunFolder`` does the folder's part (one run per folder, resume and overwrite, module docstring
there).
A folder holding a checkpoint is refused unless ``resume=true`` (continue it) or ``overwrite=true`` (start over: the
earlier checkpoint, ``final_eval.json``, ``tb/`` and ``train.log`` are set aside, and deleted only once the new run
has its first checkpoint; a stop or an error before then puts them back). Hydra's record of the command
(``.hydra/``) goes into the folder at that first checkpoint too (``ttt.cli.guard_hydra_record``): a refused start
leaves the folder's run exactly as it was. Resuming compares the config with the one saved in the checkpoint: a key
that changes the result refuses, naming it; ``episodes`` may grow, and keys that only change what is measured or
printed may change (``RESUME_FREE``). A resumed run whose ``final_eval.json`` already covers ``episodes`` is skipped
with one line (so rerunning a multirun with ``resume=true`` finishes only the jobs that had not finished). A run
that fails before training begins removes the folder when it created it. Ctrl-C or SIGTERM before training begins
stops at once (nothing to save).

Nothing written is lost: checkpoints and ``final_eval.json`` are written atomically
(``ttt.checkpoint.atomic_write``). A file that cannot be written while training (a full disk, an I/O error)
stops the run with one line (``ttt.cli.OutputError``, exit code 1): what failed, which file, which
checkpoint is safe on disk, and the command that resumes.

The schedule (``Run.start``, ``Run.tick`` after every training step, ``Run.finish``), the same for per-game
and batched learners: every ``log_every`` episodes the learner's ``train/`` scalars,
``train/episodes_per_sec`` and a progress line; every ``eval_every`` episodes a checkpoint, then an
evaluation; a checkpoint also every ``checkpoint_every`` episodes and after ``checkpoint_minutes`` without
one. Ctrl-C or SIGTERM finishes the current step, saves, prints where the checkpoint is and how to resume,
and stops with ``ttt.cli.Interrupted`` (exit code 130); during an evaluation, whose checkpoint is already
saved, it stops at once, as a second Ctrl-C does. The first and last lines of a run say where its outputs
are; ``train.log`` in the run folder holds every line.

TensorBoard tag vocabulary (every learner logs the ``eval/`` and ``train/episodes_per_sec`` tags):

=======================================  =====================================================
``eval/<opponent>/win_rate``             wins / games against ``<opponent>``, both seats
``eval/<opponent>/score``                (wins + draws / 2) / games
``eval_cpu/<opponent>/score``            the same, its step the CPU milliseconds of training (``train/cpu_seconds``)
``eval_detail/<opponent>/draw_rate``     draws / games (and ``loss_rate``)
``eval_detail/<opponent>/<seat>/score``  per seat, ``<seat>`` = ``first`` or ``second`` (and the rates)
``eval/tactics/<suite>``                 a ``ttt.evaluation.suites`` suite solved by the network alone (4x4x4,
                                         ``eval_tactics``)
``eval/defence/...``                     a learner's player whose moves are kept (``Recorded``): forced blocks in
                                         the evaluation games, ``block_rate`` (the share taken), ``miss_value``,
                                         ``forced`` (how many; ``ttt.evaluation.defence``)
``eval/values/...``                      the network alone's values: openings, one-move classes, ``auc`` (won against
                                         lost in its games); exact: 3x3, 4x4 (``ttt.evaluation.value_quality``)
``eval_final/...``                       the final evaluation, when its player's rules differ from the run's
``eval_alone/...``                       ``eval_alone=true``: ``eval/``'s matches by the network alone, no rules (a
                                         learner with ``network_alone``)
``train/episodes_per_sec``               training games per second since the last log
``train/cpu_seconds``                    CPU seconds of training, evaluations left out (``ttt.harness.clock``)
``train/td_loss``                        mean TD (Huber or squared) loss of the updates since the last log
``train/epsilon``                        exploration rate
``train/<name>``                         learner-specific scalars, documented in the learner's module
=======================================  =====================================================

Hyperparameters (the resolved config, flattened) are logged once as text under ``config``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ttt.agents import agent_module
from ttt.checkpoint import atomic_write
from ttt.cli import Interrupted, OutputError, check_writable_dir, one_line, write_hydra_record
from ttt.device import array_device
from ttt.evaluation.evaluate import MatchResult, play_match
from ttt.evaluation.value_quality import evaluation_scalars
from ttt.harness.clock import CPU_TAG, TrainingClock, left_out, logged_at
from ttt.harness.curves import eval_tag
from ttt.harness.event_file import EventFile
from ttt.harness.learners import check_values
from ttt.harness.run_dir import CHECKPOINT_NAMES, RunFolder, load_resume, played_episodes, resume_command, run_command
from ttt.players import Player

PROGRESS_SECONDS = 2.0  # at most one progress line this often
QUIET_SECONDS = 10.0  # and at least one this often while training, between log points


# ------------------------------------------------------------------------------------ the values
# ------------------------------------------------------------------------------------ the run
class Run:
    """One training run: its folder, logger, evaluation, schedule and progress lines.

    Use it as a context manager around the learner's ``train(cfg, run)``: leaving it closes the
    logs, releases the lock, restores the signal handlers, prints the last line, and after a
    failure before training began removes the folder when the run created it (or puts back the
    files overwrite=true had set aside). An ``OSError`` while training (a full disk) leaves it as
    an ``OutputError`` of one line saying what is safe on disk and how to resume.
    """

    def __init__(self, cfg: DictConfig, run_dir: str | Path, device: str | None = None) -> None:
        self.cfg = cfg
        self.dir = Path(run_dir)
        self.folder = RunFolder(self.dir)
        self._log_file = None
        self._handlers: dict[int, Any] = {}
        self.writer = None
        self.finished: dict | None = None  # final_eval.json of a resumed run that had finished: skip it
        self.resumed: dict | None = None  # the checkpoint to continue from (loaded, config compared)
        self.resume_dir = self.dir  # the run_dir of the command that resumes (a group's, for runs side by side)
        self.started = False
        self._saved: tuple[Path, int] | None = None  # the latest checkpoint on disk and its episodes
        self._cut_short = False  # an evaluation whose checkpoint is saved: a signal stops it at once
        # train/cpu_seconds (ttt.harness.clock); a resumed run's goes on from its checkpoint
        self.clock = TrainingClock()
        try:
            self.device, self.game, self.opponents = check_values(cfg, device)
            self.total = int(cfg.episodes)
            self.eval_every = int(cfg.eval_every)
            self.checkpoint_every = int(cfg.checkpoint_every)
            self.checkpoint_seconds = 60.0 * float(cfg.checkpoint_minutes)
            self.log_every = int(cfg.log_every) or max(1, min(self.eval_every or self.total, self.total) // 10)
            self.last_eval: dict[str, MatchResult] = {}
            self._stop: int | None = None
            self._t0 = time.perf_counter()
            self._t_print = 0.0
            self._t_said, self._ep_said = time.perf_counter(), 0  # the last progress line
            self._last = 0
            self._saved_at = time.monotonic()
            self._t_last, self._ep_last = time.perf_counter(), 0
            check_writable_dir(self.dir, "run_dir")
            self.folder.check_paths()
            stale = self.folder.lock.acquire()
            self._open([stale] if stale else [])
        except BaseException:
            self.close(ok=False)
            self.folder.discard()
            raise

    # ------------------------------------------------------------------ setting up
    def _open(self, notes: list[str]) -> None:
        cfg = self.cfg
        notes += self.folder.open(bool(cfg.resume), bool(cfg.overwrite),
                                  lambda path: load_resume(path, cfg, self.game.name, self.config_dict()), self.total)
        self.resumed, self.finished = self.folder.resumed, self.folder.finished
        if self.finished is not None:
            for note in notes:
                print(note, file=sys.stderr, flush=True)
            print(f"ttt.train: {self.dir} has finished ({self.finished.get('episodes')} episodes, final_eval.json); "
                  f"skipped", file=sys.stderr, flush=True)
            return
        if self.resumed is not None:
            self._saved = (self.folder.resume_path, played_episodes(self.resumed))
            self.clock = TrainingClock(logged_at(self.dir / "tb", self._saved[1]))
        self._log_file = open(self.dir / "train.log", "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        # no thread: see ttt.harness.event_file
        self.writer = EventFile(self.dir / "tb", purge_step=self.folder.purge_step)
        self.writer.add_text("config", "```\n" + OmegaConf.to_yaml(cfg, resolve=True) + "\n```", 0)
        if self.resumed is not None:  # the checkpoint's figure again: resuming drops the events from there on
            self.log(CPU_TAG, self.clock.before, self._saved[1])
        self.say(f"ttt.train: {cfg.agent.name} on {self.game.name}; outputs in {self.dir}/ "
                 f"(checkpoint, final_eval.json, tb/, train.log)")
        for note in notes:
            self.say(note)
        self._install_signal_handlers()

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._handlers[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._stop is not None or not self.started:  # before training: nothing to save, stop at once
            raise KeyboardInterrupt
        self._stop = signum
        if self._cut_short:  # an evaluation after its checkpoint: nothing to finish
            raise _CutShort
        # os.write, not print: the signal may arrive in the middle of a print to stderr
        os.write(2, f"\nttt.train: {signal.Signals(signum).name} received; finishing this step and saving "
                    f"(Ctrl-C again stops at once)\n".encode())

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        ok = error is None and self.started
        try:
            self.close(ok=ok)
        except OSError as e:  # the last line could not go into train.log
            if error is None and self.started:
                raise self.write_failure(e) from None
            raise
        if error is not None and not self.started and not isinstance(error, Interrupted):
            self.folder.discard()
        if isinstance(error, OSError) and self.started and self._owns(error):
            # a full disk or an I/O error while training: one line, what is safe, how to go on
            raise self.write_failure(error) from None

    def _owns(self, error: OSError) -> bool:
        """Whether ``error`` is this run's to report: it names a file of this run's folder (or of the
        group's ``.hydra/``), or none; runs side by side leave it to the run whose file failed."""
        if not error.filename:
            return True
        path = Path(str(error.filename)).resolve()
        return any(path.is_relative_to(folder.resolve()) for folder in (self.dir, self.resume_dir / ".hydra"))

    def write_failure(self, error: OSError) -> OutputError:
        """The one-line error for ``error`` while training: what failed, which file, which checkpoint
        is safe on disk, and the command that resumes."""
        where = error.filename or "a file in " + str(self.dir)
        reason = error.strerror or one_line(error)
        fix = "free space" if error.errno in (errno.ENOSPC, errno.EDQUOT) else "fix that"
        if self._saved is not None:
            path, episodes = self._saved
            safe = f"the checkpoint of episode {episodes} is safe in {path}; {fix}, then resume with: " \
                   f"{resume_command(self.resume_dir)}"
        else:
            safe = f"no checkpoint was saved yet; {fix}, then run the command again"
        return OutputError(f"could not write {where} ({reason}); {safe}")

    def close(self, ok: bool = True) -> None:
        """Close the logs, release the lock and the signal handlers; ``ok``: print the last line.
        Before training began, what overwrite=true set aside is put back."""
        for signum, handler in self._handlers.items():
            signal.signal(signum, handler)
        self._handlers.clear()
        try:
            if self.writer is not None:
                writer, self.writer = self.writer, None
                writer.close()
            if ok and self.finished is None and self._log_file is not None:
                outputs = [p.name + ("/" if p.is_dir() else "") for p in sorted(self.dir.iterdir())
                           if p.name in (*CHECKPOINT_NAMES, "final_eval.json", "tb", "train.log")]
                self.say(f"ttt.train: done in {time.perf_counter() - self._t0:.1f} s; outputs in {self.dir}/: "
                         f"{', '.join(outputs)} (tensorboard --logdir {self.dir / 'tb'})")
        finally:
            if self._log_file is not None:
                log, self._log_file = self._log_file, None
                with contextlib.suppress(OSError):  # a full disk: the line was printed; the error says more
                    log.close()
            self.folder.restore()  # set aside by overwrite=true and not yet deleted: no first checkpoint
            self.folder.lock.release()

    # ------------------------------------------------------------------ paths
    def checkpoint_path(self, suffix: str = ".pt") -> Path:
        return self.dir / f"checkpoint{suffix}"

    def config_dict(self) -> dict:
        return OmegaConf.to_container(self.cfg, resolve=True)

    def command(self) -> str:
        """The command line that started this run (``run_command``), for the learners' final results."""
        return run_command()

    # ------------------------------------------------------------------ logging
    def log(self, tag: str, value: float, step: int) -> None:
        self.writer.add_scalar(tag, float(value), step)

    def log_rate(self, episode: int) -> float:
        """Log and return training episodes per second since the previous call."""
        now = time.perf_counter()
        rate = (episode - self._ep_last) / max(now - self._t_last, 1e-9)
        self._t_last, self._ep_last = now, episode
        self.log("train/episodes_per_sec", rate, episode)
        return rate

    def say(self, text: str, console: bool = True) -> None:
        """A line for the user: on stderr (unless ``console`` is false) and in ``train.log``."""
        if console:
            print(text, file=sys.stderr, flush=True)
        if self._log_file is not None:
            try:
                self._log_file.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {text}\n")
                self._log_file.flush()
            except OSError as e:  # a full disk: name the file (write_failure says what is safe)
                raise OSError(e.errno, e.strerror or one_line(e), str(self.dir / "train.log")) from None

    def progress(self, episode: int, info: str = "", force: bool = False) -> None:
        """A progress line (at most every 2 s unless forced; ``tick`` writes one at least every 10 s):
        bar, episodes, device, ``info``, latest eval. It goes to ``train.log`` always, and to stderr unless
        ``progress=false``."""
        now = time.perf_counter()
        if not force and now - self._t_print < PROGRESS_SECONDS:
            return
        self._t_print = self._t_said = now
        self._ep_said = episode
        total = max(self.total, 1)
        frac = min(episode / total, 1.0)
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        evals = " ".join(f"{k}:{r.both.score:.3f}" for k, r in self.last_eval.items())
        # games side by side end a few games past the target: the counter stops there and says so
        count = f"{min(episode, total)}/{total}" + (f" (+{episode - total} in flight)" if episode > total else "")
        line = f"[{bar}] {count} {self.device}{self._time_left(episode, now)} {info}"
        line += f" | eval score {evals}" if evals else ""
        self.say(line, console=bool(self.cfg.progress))

    def _time_left(self, episode: int, now: float) -> str:
        """`` ~M min S s left`` at the mean rate since training began ('' before there is one)."""
        start = getattr(self, "_train_start", None)
        if start is None or episode >= self.total or now - start[0] < 1.0 or episode <= start[1]:
            return ""
        left = (self.total - episode) * (now - start[0]) / (episode - start[1])
        return f" ~{int(left // 60)} min {int(left % 60):02d} s left"

    def _evaluation_progress(self, label: str, name: str) -> Callable[[int, int], None]:
        """A ``play_match`` progress callback: a line when each match starts, then at most every 2 s."""
        said = [0.0]

        def report(finished: int, games: int) -> None:
            if not said[0] or time.perf_counter() - said[0] >= PROGRESS_SECONDS:
                said[0] = time.perf_counter()
                self.say(f"{label}: {name} {finished}/{games} games", console=bool(self.cfg.progress))
        return report

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, player: Player, episode: int, games: int | None = None,
                 label: str = "evaluation", group: str = "eval") -> dict[str, MatchResult]:
        """Greedy games of ``player`` against each configured opponent, both seats, and (``eval_tactics``)
        its tactics rates, logged under ``group/`` (``eval``; ``eval_final``: a final player with other
        rules), with progress lines (``label: opponent k/N games``); on the run's device when both
        players can play there (``play_match``)."""
        games = int(self.cfg.eval_games if games is None else games)
        results, cpu = {}, round(1000 * self.clock.seconds())  # eval_cpu/: the score against training's CPU ms
        entrants = [(player, group, label)]
        if self.cfg.eval_alone and group == "eval":  # the learner's player without its rules (check_learner)
            alone = agent_module(self.cfg.agent.name).network_alone(player)
            entrants.append((alone, "eval_alone", f"{label} (network alone)"))
        for i, (name, opponent) in enumerate(self.opponents):
            for who, tags, said in entrants:
                r = play_match(self.game, who, opponent, games, seed=int(self.cfg.seed) * 1000 + 7 + i,
                               agent_name=self.cfg.agent.name, opponent_name=name, device=array_device(self.device),
                               progress=self._evaluation_progress(said, name))
                results.setdefault(name, r)
                for seat in r.seats():
                    for key in ("win_rate", "draw_rate", "loss_rate", "score"):
                        self.log(eval_tag(name, key, seat.seat, tags), getattr(seat, key), episode)
                self.log(f"{tags}_cpu/{name}/score", r.both.score, cpu)
        for tag, value in evaluation_scalars(player, self.game, bool(self.cfg.eval_tactics)).items():
            self.log(f"{group}/{tag}", value, episode)  # tactics/<suite>, values/<key>
        self.last_eval = results
        self.writer.flush()
        return results

    # ------------------------------------------------------------------ the schedule
    def start(self, done: int, player: Callable[[], Player] | None = None) -> None:
        """Training begins (or continues) with ``done`` episodes played; the schedule counts from here.

        A run resumed from a checkpoint taken where an evaluation fell due (``done`` a multiple of
        ``eval_every``) is evaluated again first, with ``player``: resuming drops the TensorBoard events
        from ``done`` on, and the checkpoint is written before its evaluation, so that point would be lost
        (a batched run's evaluations fall a few games past the multiples and are not repeated)."""
        self.started = True
        every = self.eval_every
        if player is not None and self.resumed is not None and every and 0 < done < self.total and done % every == 0:
            self.evaluate_saved(player, done)
            self.progress(done, "evaluated again (resumed at an evaluation point)", force=True)
        self._last = done
        self._saved_at = time.monotonic()
        self._t_last, self._ep_last = time.perf_counter(), done
        self._t_said, self._ep_said = time.perf_counter(), done
        self._train_start = (time.perf_counter(), done)

    def tick(self, done: int, player: Callable[[], Player], save: Callable[[int], Any],
             log: Callable[[int], str] | None = None) -> None:
        """After each training step, ``done`` episodes played in all: what falls due since the last call.

        ``log(done)`` writes the learner's ``train/`` scalars and returns its part of the progress
        line; ``player()`` is the greedy player to evaluate; ``save(done)`` writes the checkpoint.
        Raises ``Interrupted`` after saving when Ctrl-C or SIGTERM asked to stop.
        """
        last, self._last = self._last, done
        every = self.log_every
        if done // every > last // every or done >= self.total > last:
            info = log(done) if log is not None else ""
            rate = self.log_rate(done)
            self.progress(done, f"{rate:,.0f} episodes/s" + (f", {info}" if info else ""))
        elif time.perf_counter() - self._t_said >= QUIET_SECONDS:  # log points far apart: a line anyway
            rate = (done - self._ep_said) / (time.perf_counter() - self._t_said)
            self.progress(done, f"{rate:,.0f} episodes/s")
        saved = False
        every = self.eval_every
        if every and done // every > last // every and done < self.total:
            self.save(save, done)  # first: a signal during the evaluation then stops at once
            saved = True
            self.evaluate_saved(player, done)
            self.progress(done, "evaluated", force=True)
        every = self.checkpoint_every
        if not saved and done < self.total and (
                (every and done // every > last // every)
                or (self.checkpoint_seconds and time.monotonic() - self._saved_at >= self.checkpoint_seconds)):
            self.save(save, done)
            saved = True
        if saved:
            self._saved_at = time.monotonic()
        if self._stop is not None:
            if not saved and self.folder.set_aside():
                self.say(f"ttt.train: stopped by {signal.Signals(self._stop).name} at episode {done}, before this "
                         f"run's first checkpoint; the earlier run is back in place (overwrite=true again starts over)")
                raise Interrupted()  # close() puts the earlier run's files back
            if not saved:
                self.save(save, done)
            self._stopped(done)

    def save(self, save: Callable[[int], Any], done: int) -> None:
        """``save(done)`` writes the checkpoint. The run's first one completes its start: the earlier
        run's files set aside by overwrite=true are deleted, and Hydra's record of the command goes in."""
        save(done)
        saved = self.folder.existing()
        if saved:
            self._saved = (max(saved, key=lambda p: p.stat().st_mtime), done)
        note = self.folder.commit()
        if note:
            self.say(note)
        write_hydra_record(self.resume_dir)
        self.log(CPU_TAG, self.clock.seconds(), done)  # on disk now: a resume reads it back (ttt.harness.clock)
        self.writer.flush()

    def evaluate_saved(self, player: Callable[[], Player], done: int, games: int | None = None,
                       label: str = "evaluation", group: str = "eval") -> dict[str, MatchResult]:
        """``evaluate(player(), done, games)`` once the checkpoint of ``done`` is saved: Ctrl-C or
        SIGTERM stops it at once (``Interrupted``, after the lines saying where the checkpoint is)."""
        self._cut_short = True
        try:
            if self._stop is not None:
                raise _CutShort
            with left_out():  # not a cost of training (ttt.harness.clock)
                results = self.evaluate(player(), done, games, label, group)
            self._cut_short = False  # inside the try: a signal up to here is caught below
            return results
        except _CutShort:
            self._cut_short = False
            self._stopped(done)
            raise  # not reached: _stopped raises Interrupted
        finally:
            self._cut_short = False  # also after any other error

    def check_stop(self) -> None:
        """For a learner with nothing to save midway: raise ``Interrupted`` if a stop was asked."""
        if self._stop is not None:
            self.say(f"ttt.train: stopped by {signal.Signals(self._stop).name}; nothing saved "
                     f"({self.cfg.agent.name} starts over: run again with overwrite=true)")
            raise Interrupted()

    def finish(self, player: Callable[[], Player], done: int, save: Callable[[int], Any],
               games: int | None = None, group: str = "eval") -> dict[str, MatchResult]:
        """At the end: ``save(done)``, the final evaluation (``games`` per opponent, default
        ``eval_games``, logged under ``group/``), and a last progress line."""
        self.save(save, done)
        results = self.evaluate_saved(player, done, games, "final evaluation", group)
        self.progress(done, "final evaluation", force=True)
        return results

    def _stopped(self, done: int) -> None:
        saved = self.folder.existing()
        where = self._saved[0] if self._saved else (saved[0] if saved else self.dir)
        self.say(f"ttt.train: stopped by {signal.Signals(self._stop).name} at episode {done} of {self.total}; "
                 f"checkpoint saved: {where}")
        from ttt.harness.run_dir import sweep_dir  # here: the import line above is full

        sweep = sweep_dir()
        if sweep is not None:
            self.say(f"ttt.train: to resume the whole sweep, run it again with resume=true hydra.sweep.dir={sweep}")
        self.say(f"ttt.train: resume with: {resume_command(self.resume_dir)}")
        raise Interrupted()

    def write_final(self, results: dict[str, MatchResult], extra: dict | None = None,
                    episodes: int | None = None) -> dict:
        """Write ``final_eval.json`` in the run directory; return what was written.

        ``episodes``: training games played (default ``cfg.episodes``; 0 for a learner that plays none).
        """
        out = {
            "game": self.game.name,
            "agent": self.cfg.agent.name,
            "episodes": int(self.cfg.episodes if episodes is None else episodes),
            "results": [row for name, r in results.items() for row in r.rows(name)],
            **(extra or {}),
        }
        text = json.dumps(out, indent=2) + "\n"
        atomic_write(self.dir / "final_eval.json", lambda tmp: tmp.write_text(text))
        return out


class _CutShort(BaseException):
    """Raised by the signal handler in an evaluation whose checkpoint is saved (nothing may swallow it)."""
