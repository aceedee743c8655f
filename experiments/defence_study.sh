#!/usr/bin/env bash
# The defence study on Score Four (docs/paper.md, "Defence"): the deep structured network trained against the
# benchmark player, B=64 at lr 0.04, one Hydra multirun over the arms of configs/defence/ (a job per arm, its
# SEEDS runs side by side in one process, <sweep>/<job>/seed_<s>/), each test point logging the block rate:
#
#   experiments/defence_study.sh [key=value ...]
#
# Settings from the environment (defaults in brackets):
#   ARMS [grid,exact_losses,free_placement,playable,sigmoid_no_bias,rule_labels]
#   SEEDS [3]  FIRST_SEED [0]  EPISODES [200000]  EVAL_EVERY [10000]  EVAL_GAMES [1000]
#   LAUNCHER [joblib | slurm]  JOBS [-1: one joblib worker per core]  SWEEP_DIR [runs/paper/defence]  PYTHON [python]
# Extra key=value arguments go last to ttt.train and win. Needs the sweep extra: pip install -e '.[sweep]'.
# Run the same command with resume=true to continue it. Then the table, the CSV and the figure:
#   python experiments/summarize.py runs/paper/defence format=runs last=8 > docs/defence_study.csv
#   python experiments/summarize.py docs/defence_study.csv last=8
#   python -m ttt.plot docs/defence_study.csv figure=defence output=docs/defence_study.png
set -euo pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,16p' "$0"
  exit 0
fi
arms=${ARMS:-grid,exact_losses,free_placement,playable,sigmoid_no_bias,rule_labels}
eval_games=${EVAL_GAMES:-1000}
LAUNCHER=${LAUNCHER:-joblib}
launcher=("hydra/launcher=$LAUNCHER")
if [ "$LAUNCHER" = joblib ]; then
  launcher+=("hydra.launcher.n_jobs=${JOBS:--1}")
fi
(set -x; "${PYTHON:-python}" -m ttt.train -m "${launcher[@]}" "hydra.sweep.dir=${SWEEP_DIR:-runs/paper/defence}" \
  +experiment=dqn_444_gravity_vs_benchmark "+defence=$arms" num_envs=64 agent.lr=0.04 \
  "seed=${FIRST_SEED:-0}" "seeds=${SEEDS:-3}" "episodes=${EPISODES:-200000}" "eval_every=${EVAL_EVERY:-10000}" \
  "eval_games=$eval_games" "agent.final_eval_games=$eval_games" progress=false "$@")
