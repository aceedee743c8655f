"""experiments/summarize.py: the paper-style table from a folder of runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from torch.utils.tensorboard import SummaryWriter

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "summarize.py"


@pytest.fixture(scope="module")
def summarize():
    spec = importlib.util.spec_from_file_location("summarize", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_run(root: Path, name: str, overrides: list[str], scores: list[float]) -> None:
    run = root / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    with SummaryWriter(str(run / "tb")) as w:
        for step, s in enumerate(scores):
            w.add_scalar("eval/benchmark/score", s, step * 100)


def test_groups_seeds_and_computes_peak_and_end(tmp_path, summarize):
    fake_run(tmp_path, "0", ["network=a", "seed=0"], [0.1, 0.5, 0.3, 0.2])
    fake_run(tmp_path, "1", ["network=a", "seed=1"], [0.2, 0.3, 0.4, 0.4])
    fake_run(tmp_path, "2", ["network=b", "seed=0"], [0.6, 0.7])
    rows = {r["group"]: r for r in summarize.summarize(tmp_path, last=2)}
    assert set(rows) == {"network=a", "network=b"}
    a = rows["network=a"]
    assert a["trials"] == 2
    # peaks 50 and 40 -> mean 45, sd 7.07; ends (0.3+0.2)/2=25 and 40 -> mean 32.5
    assert a["peak"][0] == pytest.approx(45.0)
    assert a["peak"][1] == pytest.approx(7.0710678, rel=1e-5)
    assert a["end"] == pytest.approx((32.5, 10.6066017))  # sd of 25 and 40
    assert rows["network=b"]["trials"] == 1 and rows["network=b"]["peak"] == pytest.approx((70.0, 0.0))


def test_missing_tag_gives_no_rows(tmp_path, summarize):
    fake_run(tmp_path, "0", ["seed=0"], [0.1])
    assert summarize.summarize(tmp_path, tag="eval/random/score") == []


@pytest.mark.parametrize("value", ["0", "-1", "abc", "2.5"])
def test_last_must_be_a_whole_number_of_points(tmp_path, summarize, value, capsys):
    # last=0 averaged the whole curve, last=-1 all but the first point, last=abc was a traceback
    fake_run(tmp_path, "0", ["seed=0"], [0.1, 0.5])
    with pytest.raises(SystemExit) as err:
        summarize.main([str(tmp_path), f"last={value}"])
    assert err.value.code == f"summarize: last={value}: give a whole number of points >= 1"
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="last=0"):
        summarize.summarize(tmp_path, last=0)
