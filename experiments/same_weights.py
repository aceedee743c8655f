"""Train experiments' first games with this checkout's learner and with an earlier commit's, and compare the
weights: a refactoring of the learner must leave them the same (``torch.allclose``, ``atol``).

    python experiments/same_weights.py [commit=29c68a5] [games=512] [atol=1e-6]
        [experiments=dqn_444,dqn_444_value_d16,dqn_33,dqn_444_gravity] [runs=1,2]

Each experiment is trained as ``ttt.train`` would (``seed_everything(0)``, its composed config) for ``games``
games of each run, alone (runs=1) and two seeds side by side (runs=2), by a ``Trainer`` of each checkout, in
a fresh process with that checkout first on the path (the commit's in a temporary ``git worktree``, removed
after). One line a comparison (experiment, runs, largest difference, the verdict); exit 1 if any differs.
Both checkouts compose the experiment from their own configs: where an experiment was changed on purpose
since the commit, give the commit's run its old settings with ``overrides_then=KEY=VALUE;KEY=VALUE``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ttt.cli import exit_on_help, key_values, run_cli

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = {"commit": "29c68a5", "games": "512", "atol": "1e-6", "runs": "1,2", "overrides_then": "",
            "experiments": "dqn_444,dqn_444_value_d16,dqn_33,dqn_444_gravity"}

# run in the checkout under test: its ttt is first on the path (the harness modules moved over time)
TRAIN = """
import sys, numpy as np, torch
from hydra import compose, initialize_config_dir
try:
    from ttt.harness.learners import register_configs, seed_everything
except ImportError:
    from ttt.learners import register_configs, seed_everything
from ttt.agents.dqn import Trainer
from ttt.games import make_game
from ttt.games.arrays import NUMPY
root, out, games = sys.argv[1], sys.argv[2], int(sys.argv[3])
experiments, runs = sys.argv[4].split(","), [int(k) for k in sys.argv[5].split(",")]
extra = [o for o in sys.argv[6].split(";") if o]
register_configs(); torch.set_num_threads(1)
weights = {}
for exp in experiments:
    with initialize_config_dir(config_dir=root + "/configs", version_base="1.3"):
        cfg = compose("train", overrides=[f"+experiment={exp}", *extra])
    for k in runs:
        seed_everything(0)
        seeds = list(range(k))
        t = Trainer(make_game(cfg.game.name), cfg.network, cfg.agent, int(cfg.num_envs),
                    [NUMPY.generator(s) for s in seeds], seeds=seeds if k > 1 else None)
        while t.run_episodes.min() < games:
            t.step()
        for r in range(k):
            for name, v in t.nets[r].state_dict().items():
                weights[f"{exp}|{k}|{r}|{name}"] = v.detach().cpu().numpy()
np.savez(out, **weights)
"""


def parse(argv: list[str]) -> dict[str, str]:
    """The options of ``argv`` (``KEY=VALUE``); ValueError naming a bad one."""
    opts = key_values(argv, DEFAULTS)
    for key in ("games", "atol"):
        if not float(opts[key]) > 0:
            raise ValueError(f"{key}={opts[key]}: must be > 0")
    if not set(opts["runs"].split(",")) <= {"1", "2"}:
        raise ValueError(f"runs={opts['runs']}: 1, 2 or 1,2")
    known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{opts['commit']}^{{commit}}"], cwd=ROOT,
                           capture_output=True)
    if known.returncode:
        raise ValueError(f"commit={opts['commit']}: not a commit of {ROOT}")
    return opts


def train(checkout: Path, out: Path, opts: dict[str, str], overrides: str) -> dict:
    subprocess.run([sys.executable, "-c", TRAIN, str(checkout), str(out), opts["games"], opts["experiments"],
                    opts["runs"], overrides], check=True, cwd=checkout, env={"PYTHONPATH": str(checkout),
                                                                              "PATH": "/usr/bin:/bin"})
    return dict(np.load(out))


def main(argv: list[str]) -> int:
    exit_on_help(argv, __doc__, needed=False)
    return run_cli(compare, argv)


def compare(argv: list[str]) -> int:
    """Train and compare as ``argv`` says; print a line a comparison; 1 if any differs, else 0."""
    opts = parse(argv)
    with tempfile.TemporaryDirectory() as tmp:
        then = Path(tmp) / "then"
        subprocess.run(["git", "worktree", "add", "--detach", str(then), opts["commit"]], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            old = train(then, Path(tmp) / "then.npz", opts, opts["overrides_then"])
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(then)], cwd=ROOT, capture_output=True)
        new = train(ROOT, Path(tmp) / "now.npz", opts, "")
    atol, bad = float(opts["atol"]), 0
    for exp in opts["experiments"].split(","):
        for k in opts["runs"].split(","):
            keys = [key for key in old if key.startswith(f"{exp}|{k}|")]
            diff = max(float(np.abs(old[key] - new[key]).max()) if key in new else np.inf for key in keys)
            same = diff <= atol
            bad += not same
            print(f"{exp:22s} runs={k}  largest difference {diff:.2e}  {'same' if same else 'DIFFERENT'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
