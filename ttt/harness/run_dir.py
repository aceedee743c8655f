"""The run folder and its guard: one run per folder, no silent overwrite, resume compared with the
checkpoint's config, and nothing on disk lost when a start fails.

``RunFolder`` is what ``ttt.harness.training.Run`` opens a folder with:

* ``check_paths``: the names a run writes (``checkpoint.pt``, ``checkpoint.npz``, ``final_eval.json``,
  ``train.log``, ``train.lock``; ``tb/``) must not be of the wrong kind (a folder called
  ``checkpoint.pt``) before any work starts.
* ``lock`` (``RunLock``): ``train.lock`` holds the pid, the process's start time
  (``/proc/<pid>/stat`` field 22), the boot id and the host of the run using the folder. A lock
  whose process is gone, whose pid now belongs to another process (another start time), that was
  taken before the machine rebooted, or that holds no possible pid (-1, 10**30: not one a run
  wrote) is stale and replaced, with a note saying why.
* ``open(resume, overwrite, ...)``: a folder holding a checkpoint is refused unless ``resume=true``
  (the checkpoint is loaded and its config compared: ``config_changes``) or ``overwrite=true``; one
  holding an earlier run's results (``final_eval.json``, ``train.log``, ``tb/``, ``.hydra/``) but no
  checkpoint, or both ``checkpoint.pt`` and ``checkpoint.npz``, is refused unless ``overwrite=true``.
  A folder's layout is fixed once it holds a run: one run, or the ``seed_<s>/`` folders of runs side
  by side (``seeds=K``, ``check_group_folder``); a start that would change it is refused, whatever
  ``resume`` and ``overwrite`` say. The temporary files a run killed mid-write left
  (``ttt.checkpoint.temporary_files``) are removed once the start is accepted.
  Overwriting first moves the earlier run's files (checkpoint, ``final_eval.json``, ``tb/``,
  ``train.log``) aside into ``.overwritten/``; they are deleted only once the new run has its
  first checkpoint (``commit``) and put back when the start fails or stops before then
  (``restore``). A ``.overwritten/`` left by a run killed in between is put back by the next open.
* ``discard``: a folder this run created (nothing but Hydra's record of the job in it) is removed
  after a failed start.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ttt.agents import agent_module
from ttt.checkpoint import CheckpointError, load_checkpoint, temporary_files
from ttt.config import ConfigError

CHECKPOINT_NAMES = ("checkpoint.pt", "checkpoint.npz")
LOCK_NAME = "train.lock"
HYDRA_RECORD = ".hydra"  # what Hydra writes into a job's folder before the job starts
PID_MAX = 2**22  # the largest process id Linux gives (kernel.pid_max at most); os.kill takes no larger
ASIDE = ".overwritten"  # the earlier run's files while an overwrite=true run starts
RUN_FILES = (*CHECKPOINT_NAMES, "final_eval.json", "train.log")  # plain files a run writes
RUN_FOLDERS = ("tb",)
SEED_FOLDER = re.compile(r"seed_(\d+)")  # one run of a group side by side (seeds=K): run_dir/seed_<s>/
# keys that change only what is measured, saved or printed, not the weights: they may differ on resume
RESUME_FREE = {"eval_every", "eval_games", "eval_opponents", "eval_tactics", "eval_alone", "threads",
               "checkpoint_every", "checkpoint_minutes", "log_every", "device", "agent.final_eval_games",
               "agent.eval_simulations", "agent.play_threats"}
RESUME_UNSAID = {"resume", "overwrite", "run_dir", "progress"}  # differ as a matter of course: not even noted


# ------------------------------------------------------------------------------------ the lock
# the commands that started a run and that continue it
def hydra_overrides() -> list[str] | None:
    """The command-line overrides of the Hydra job running now, or None outside Hydra."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else None


def run_command() -> str:
    """The command line that started this run, when Hydra started it."""
    overrides = hydra_overrides()
    return "ttt.train.train(cfg)" if overrides is None else shlex.join(["python", "-m", "ttt.train", *overrides])


def hydra_value(text: str) -> str:
    """``text`` as the value of a Hydra override: quoted when it holds characters of the override
    grammar (a multirun job's folder name holds ``=`` and ``,``)."""
    if re.fullmatch(r"[\w./~:@%+-]+", text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def resume_command(run_dir: Path) -> str:
    """The command that continues the run in ``run_dir`` from its checkpoint."""
    overrides = hydra_overrides()
    if overrides is None:
        return f"train(cfg) with the same config and resume=true run_dir={hydra_value(str(run_dir))}"
    keep = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in ("run_dir", "resume", "overwrite")]
    return shlex.join(["python", "-m", "ttt.train", *keep, f"run_dir={hydra_value(str(run_dir))}", "resume=true"])


def sweep_dir() -> str | None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        return str(HydraConfig.get().sweep.dir)
    return None



def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field 22),
    or None where it cannot be read (no such process, no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else None  # fields[0] is field 3


def boot_id() -> str | None:
    """This boot of the machine (``/proc/sys/kernel/random/boot_id``), or None where unknown."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _process_alive(pid: int, start: str | None = None) -> bool:
    """Whether process ``pid`` exists and, when ``start`` is known, is the one that started then."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        pass
    now = process_start(pid) if start is not None else None
    return now is None or now == start  # another start time: the pid was reused


class RunLock:
    """``train.lock`` in a run folder: the pid, its start time, the boot and the host of the run using it."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_NAME
        self.held = False

    def acquire(self) -> str | None:
        """Take the lock; returns a note when a stale lock was replaced. Raises ConfigError when a
        live process holds it (or one on another host, which cannot be checked)."""
        note = None
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self.path.is_file() or self.path.is_symlink():
                    raise ConfigError(f"run_dir {self.path.parent}: {LOCK_NAME} is not a file; "
                                      f"remove {self.path} if no run is using the folder") from None
                holder, why = self._holder()
                if holder is not None:
                    raise ConfigError(f"run_dir {self.path.parent} is in use by another training ({holder}); "
                                      f"wait for it, stop it, or choose another run_dir") from None
                note = f"removed a stale lock {self.path} ({why})"
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w") as f:
                json.dump({"pid": os.getpid(), "start": process_start(os.getpid()), "boot": boot_id(),
                           "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}, f)
            self.held = True
            return note
        raise ConfigError(f"run_dir {self.path.parent}: could not take {LOCK_NAME} (other runs keep starting here)")

    def _holder(self) -> tuple[str | None, str]:
        """Who holds the lock, when someone does; else (None, why the lock is stale)."""
        try:
            info = json.loads(self.path.read_text())
            pid, host = info["pid"], str(info["host"])
        except FileNotFoundError:
            return None, "it was just released"
        except (OSError, ValueError, KeyError, TypeError):
            # unreadable: either being written this instant, or left half-written by a killed run
            try:
                young = time.time() - self.path.stat().st_mtime < 10
            except OSError:
                return None, "it was just released"
            return ("a run starting this moment", "") if young else (None, "it was left half-written")
        if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= PID_MAX:
            return None, f"it holds no process id: pid {pid!r}"  # no run wrote it: written by hand, or damaged
        if host != socket.gethostname():
            return (f"pid {pid} on host {host}, which cannot be checked from here; delete {self.path} "
                    f"if no run is using the folder"), ""
        if info.get("boot") and boot_id() and info["boot"] != boot_id():
            return None, "it was taken before the machine restarted"
        start = info.get("start")
        if _process_alive(pid, str(start) if start is not None else None):
            return f"pid {pid}, started {info.get('started', '?')}", ""
        if start is not None and process_start(pid) is not None:
            return None, f"pid {pid} now belongs to another process"
        return None, "its process is gone"

    def release(self) -> None:
        """Remove the lock when this run holds it."""
        if self.held:
            self.held = False
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass


# ------------------------------------------------------------------------------------ resume
def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict) and (node or not prefix):  # an empty dict is a value: e.g. a part without settings
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: node}


def config_changes(saved: dict, now: dict, retired: dict[str, tuple[Any, str]] | None = None,
                   ) -> tuple[list[str], list[str]]:
    """The keys that differ between a checkpoint's config and this run's, as ``key old -> new``:
    (those that change the result, those that may change on resume: ``RESUME_FREE``, ``episodes``
    and keys the checkpoint does not record). An option the learner has retired (``retired``, its
    ``RETIRED``: setting -> (kept value, commit)) at its kept value is no change; at another value it is
    a ConfigError naming the commit that continues the run."""
    old, new = _flatten(saved), _flatten(now)
    retired = {f"agent.{k}": v for k, v in (retired or {}).items()}
    refused, free = [], []
    for key in sorted(set(old) | set(new)):
        if key in RESUME_UNSAID or (key in old and key in new and old[key] == new[key]):
            continue
        if key not in new and key in retired:
            kept, commit = retired[key]
            if old[key] == kept:
                continue  # the removed option's kept behaviour
            value = str(old[key]).lower() if isinstance(old[key], bool) else old[key]
            raise ConfigError(f"resume=true: the checkpoint was trained with {key}={value}, an option since removed; "
                              f"continue it at commit {commit} (git checkout {commit}), or start a new run_dir, "
                              f"or overwrite=true")
        text = f"{key} {old.get(key, '(not recorded)')} -> {new.get(key, '(not set)')}"
        if key in RESUME_FREE or key == "episodes" or key not in old:
            free.append(text)  # a key the checkpoint does not record came with a newer version
        else:
            refused.append(text)
    return refused, free


def played_episodes(payload: dict) -> int:
    """The training games a checkpoint has played (0 for one that counts none)."""
    return int(payload.get("episodes", payload.get("episode", 0)))


def load_resume(path: Path, cfg: Any, game: str, config: dict) -> tuple[dict, list[str]]:
    """The checkpoint at ``path`` to continue the run of ``cfg`` (its learner and ``game`` checked;
    ``config``, the run's resolved config, compared with the checkpoint's: ``config_changes``) and the
    changes that may be made; ConfigError for a change that alters the result or fewer episodes."""
    payload = load_checkpoint(path, kind=cfg.agent.name, game=game)
    saved, module = payload.get("config"), agent_module(cfg.agent.name)
    upgrade = getattr(module, "upgrade_agent", None)  # the learner reads its older configs as it reads them now
    if upgrade is not None and isinstance(saved, dict) and isinstance(saved.get("agent"), dict):
        saved, config = {**saved, "agent": upgrade(saved["agent"])}, {**config, "agent": upgrade(config["agent"])}
    retired = getattr(module, "RETIRED", {})
    refused, free = config_changes(saved, config, retired) if isinstance(saved, dict) else (
        [], ["the checkpoint records no config: not compared"])
    if refused:
        raise ConfigError(f"resume=true: {path} was trained with other settings ({'; '.join(refused)}); "
                          f"these change the result: resume with the checkpoint's values, or start a new "
                          f"run_dir, or overwrite=true")
    played, total = played_episodes(payload), int(cfg.episodes)
    planned = saved.get("episodes") if isinstance(saved, dict) else None
    if total < played and total != planned:  # a batched run may end a few games past its plan
        raise ConfigError(f"resume=true: {path} has played {played} episodes; episodes={total} is fewer "
                          f"(episodes may grow, or stay at least {played})")
    return payload, free


# ------------------------------------------------------------------------------------ the layout
def group_seeds(folder: Path) -> list[int]:
    """The seeds whose runs side by side ``folder`` holds: its ``seed_<s>/`` folders with a run's files in them."""
    try:
        entries = list(Path(folder).iterdir())
    except OSError:  # not there, or unreadable (check_writable_dir reports it)
        return []
    return sorted(int(m.group(1)) for p in entries if (m := SEED_FOLDER.fullmatch(p.name)) and p.is_dir()
                  and any((p / name).exists() for name in (*RUN_FILES, *RUN_FOLDERS)))


def group_text(seeds: list[int]) -> str:
    """``seeds`` as the options of the command that trains them side by side, else as their folders."""
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seed={seeds[0]} seeds={len(seeds)}"
    return "the runs of " + ", ".join(f"seed_{s}/" for s in seeds)


def check_group_folder(run_dir: Path, seeds: list[int]) -> None:
    """Refuse (ConfigError, one line) runs side by side of ``seeds`` in ``run_dir`` when the folder holds
    a single run (its files would sit beside the group's folders) or the runs of other seeds (a group's
    seeds are fixed at its start), before any folder is made."""
    run_dir = Path(run_dir)
    single = [name + ("/" if name in (*RUN_FOLDERS, ASIDE) else "") for name in (*RUN_FILES, *RUN_FOLDERS, ASIDE)
              if (run_dir / name).exists()]
    if single:
        raise ConfigError(f"seeds={len(seeds)}: run_dir {run_dir} holds a single run ({', '.join(single)}); runs "
                          f"side by side go into seed_<s>/ folders and would be filed with it: choose another run_dir")
    held = group_seeds(run_dir)
    if held and held != seeds:
        raise ConfigError(f"{group_text(seeds)}: run_dir {run_dir} holds the runs side by side of {group_text(held)}; "
                          f"a group keeps its seeds: continue it with those, or choose another run_dir")


# ------------------------------------------------------------------------------------ the folder
class RunFolder:
    """A run's folder: its lock, the checks of what is in it, resume and overwrite (module docstring)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        # nothing but Hydra's record of this job in it: the folder is this run's (removed if it fails at start)
        try:
            self.fresh = not self.path.exists() or (self.path.is_dir() and
                                                    {p.name for p in self.path.iterdir()} <= {HYDRA_RECORD})
        except OSError:  # unreadable: not ours to remove (check_writable_dir reports it)
            self.fresh = False
        self.lock = RunLock(self.path)
        self.resumed: dict | None = None  # the checkpoint to continue from
        self.resume_path: Path | None = None
        self.finished: dict | None = None  # final_eval.json of a resumed run that had finished
        self.purge_step: int | None = None  # TensorBoard events from here on are replaced (resume)
        self._aside: list[str] = []  # names moved into ASIDE by overwrite=true

    def existing(self) -> list[Path]:
        """The checkpoints in the folder."""
        return [self.path / name for name in CHECKPOINT_NAMES if (self.path / name).is_file()]

    def results(self) -> list[str]:
        """The names of an earlier run's outputs besides its checkpoint: ``final_eval.json``, ``train.log``,
        ``tb/``, and Hydra's record of its command (``.hydra/``, written at its first checkpoint)."""
        names = [name for name in RUN_FILES if name not in CHECKPOINT_NAMES and (self.path / name).exists()]
        names += [name + "/" for name in RUN_FOLDERS if (self.path / name).exists()]
        record = self.path / HYDRA_RECORD
        return names + [HYDRA_RECORD + "/"] if record.is_dir() and any(record.iterdir()) else names

    def check_paths(self) -> None:
        """Refuse (ConfigError) a name the run writes that is there as the wrong kind of thing."""
        for name in (*RUN_FILES, LOCK_NAME):
            path = self.path / name
            if path.is_dir() or (path.is_symlink() and not path.exists()):
                kind = "a folder" if path.is_dir() else "a broken symbolic link"
                raise ConfigError(f"run_dir {self.path}: {name} is {kind}, where the run writes a file; "
                                  f"move it away or choose another run_dir")
        for name in RUN_FOLDERS:
            path = self.path / name
            if path.exists() and not path.is_dir():
                raise ConfigError(f"run_dir {self.path}: {name} is a file, where the run writes a folder; "
                                  f"move it away or choose another run_dir")

    def open(self, resume: bool, overwrite: bool, load: Callable[[Path], tuple[dict, list[str]]],
             total: int) -> list[str]:
        """Decide what the run does with the folder; returns the notes to print.

        ``load(path)`` reads a checkpoint and compares its config (raising CheckpointError or
        ConfigError); ``total`` is the run's ``episodes``. Sets ``resumed``, ``resume_path``,
        ``finished`` and ``purge_step``; with ``overwrite`` the earlier run's files are set aside.
        """
        notes = self._recover()
        held = group_seeds(self.path)
        if held:
            raise ConfigError(f"run_dir {self.path} holds runs side by side ({', '.join(f'seed_{s}/' for s in held)}); "
                              f"a single run would be filed with them: continue them with {group_text(held)}, or "
                              f"choose another run_dir")
        existing, results = self.existing(), self.results()
        if len(existing) > 1 and not overwrite:
            raise ConfigError(f"run_dir {self.path} holds both {existing[0].name} and {existing[1].name}, checkpoints "
                              f"of two runs; move one away, or overwrite=true starts over (deleting both)")
        if existing and not resume and not overwrite:
            raise ConfigError(f"run_dir {self.path} holds {existing[0].name} of an earlier run; resume=true "
                              f"continues it, overwrite=true starts over (deleting it)")
        if results and not existing and not overwrite:
            raise ConfigError(f"run_dir {self.path} holds {', '.join(results)} of an earlier run but no checkpoint"
                              f"{' to resume' if resume else ''}; overwrite=true starts over (deleting them), or "
                              f"choose another run_dir")
        notes += self._remove_temporaries()
        if resume and existing:
            errors: list[CheckpointError | ConfigError] = []
            for path in existing:
                try:
                    self.resumed, free = load(path)
                    self.resume_path = path
                    break
                except CheckpointError as e:
                    errors.append(e)
            else:
                raise errors[0]
            final = _read_json(self.path / "final_eval.json")
            # value iteration plays no games (episodes 0): a finished solve is final
            if final is not None and (final.get("episodes") == 0 or total <= int(final.get("episodes", 0))):
                self.finished = final
                return notes
            self.purge_step = played_episodes(self.resumed)
            notes.append(f"resumed {self.resume_path} at episode {self.purge_step}"
                         + (f" (changed: {'; '.join(free)})" if free else ""))
        elif resume:
            notes.append(f"resume=true: no checkpoint in {self.path}; starting from the beginning")
        if overwrite and (existing or results):
            self._set_aside()
        return notes

    def _remove_temporaries(self) -> list[str]:
        """The temporary files of the run's atomic writes that a run killed mid-write left (the lock is
        held: no run is writing them now)."""
        stray = [p for name in RUN_FILES for p in temporary_files(self.path / name)]
        for path in stray:
            path.unlink(missing_ok=True)
        return [f"removed {', '.join(p.name for p in stray)}, left by a run killed while writing"] if stray else []

    # ------------------------------------------------------------------ overwrite=true
    def _set_aside(self) -> None:
        names = [name for name in (*RUN_FILES, *RUN_FOLDERS) if (self.path / name).exists()]
        if not names:  # Hydra's record alone: the new run's replaces it at its first checkpoint
            return
        aside = self.path / ASIDE
        aside.mkdir()
        for name in names:
            os.rename(self.path / name, aside / name)
            self._aside.append(name)

    def set_aside(self) -> bool:
        """Whether the earlier run's files are set aside, not yet deleted (overwrite=true before the
        new run's first checkpoint)."""
        return bool(self._aside)

    def commit(self) -> str | None:
        """Training has begun: delete the earlier run's files set aside by overwrite=true; returns the note."""
        if not self._aside:
            return None
        shutil.rmtree(self.path / ASIDE, ignore_errors=True)
        names = [n + "/" if n in RUN_FOLDERS else n for n in self._aside]
        self._aside = []
        return f"overwrite=true: deleted the earlier run's {', '.join(names)}"

    def restore(self) -> None:
        """The start failed: put the earlier run's files back in place of this run's."""
        if not self._aside:
            return
        aside = self.path / ASIDE
        for name in (*RUN_FILES, *RUN_FOLDERS):
            if (aside / name).exists():
                target = self.path / name
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
                os.rename(aside / name, target)
        self._aside = []
        shutil.rmtree(aside, ignore_errors=True)

    def _recover(self) -> list[str]:
        """A ``.overwritten/`` left by a run killed while it started: its files go back where this
        folder lacks them (the lock is held: no other run is using it)."""
        aside = self.path / ASIDE
        if not aside.is_dir():
            return []
        back = []
        for name in (*RUN_FILES, *RUN_FOLDERS):
            if (aside / name).exists() and not (self.path / name).exists():
                os.rename(aside / name, self.path / name)
                back.append(name)
        shutil.rmtree(aside, ignore_errors=True)
        return [f"put back {', '.join(back)} of an earlier overwrite=true run that stopped while it started"] \
            if back else []

    def discard(self) -> None:
        """After a failure before training began: remove the folder if this run created it (nothing
        but Hydra's record of the job was in it) and no other run holds it."""
        if self.fresh and self.path.is_dir() and not (self.path / LOCK_NAME).exists():
            shutil.rmtree(self.path, ignore_errors=True)
            # and the folders above it that are left empty, up to the working directory (Hydra's
            # runs/<learner>_<board>/ of a refused first run)
            here = Path.cwd().resolve()
            for parent in self.path.resolve().parents:
                if parent == here or here not in parent.parents:
                    break
                try:
                    parent.rmdir()  # only an empty folder
                except OSError:
                    break
