#!/usr/bin/env bash
# The paper's experiments on Score Four as Hydra multiruns (docs/paper.md explains them):
#
#   experiments/paper_grid.sh grid [key=value ...]      5 networks x 2 regimes (self-play, vs benchmark) x SEEDS
#   experiments/paper_grid.sh fidelity [key=value ...]  structured_deep vs benchmark with num_envs 1, 16, 128
#
# Settings from the environment (defaults in brackets):
#   SEEDS [0,1,2]  EPISODES [200000]  EVAL_EVERY [10000]  EVAL_GAMES [1000, half per seat]
#   LAUNCHER [joblib: parallel jobs on this machine | slurm: one SLURM job per run, configs/hydra/launcher/slurm.yaml]
#   JOBS [-1: one joblib worker per core]  NUM_ENVS [1,16,128, fidelity only]
#   SWEEP_DIR [runs/paper/<mode>]  PYTHON [python]
# Extra key=value arguments go last to ttt.train and win over the above, e.g. hydra.launcher.partition=cpu.
# Needs the sweep extra: pip install -e '.[sweep]'.
set -euo pipefail

mode=${1:-}
case "$mode" in
  grid)
    sweep=("+experiment=dqn_444_gravity,dqn_444_gravity_vs_benchmark"
           "network=structured_deep,structured_small,mlp_small,mlp_deep,mlp_wide") ;;
  fidelity)
    sweep=("+experiment=dqn_444_gravity_vs_benchmark" "network=structured_deep" "num_envs=${NUM_ENVS:-1,16,128}") ;;
  *)
    sed -n '2,13p' "$0" >&2
    exit 2 ;;
esac
shift

LAUNCHER=${LAUNCHER:-joblib}
EVAL_GAMES=${EVAL_GAMES:-1000}
launcher=("hydra/launcher=$LAUNCHER")
if [ "$LAUNCHER" = joblib ]; then
  launcher+=("hydra.launcher.n_jobs=${JOBS:--1}")
fi

set -x
exec "${PYTHON:-python}" -m ttt.train -m "${launcher[@]}" "hydra.sweep.dir=${SWEEP_DIR:-runs/paper/$mode}" \
  "${sweep[@]}" "seed=${SEEDS:-0,1,2}" "episodes=${EPISODES:-200000}" "eval_every=${EVAL_EVERY:-10000}" \
  "eval_games=$EVAL_GAMES" "agent.final_eval_games=$EVAL_GAMES" progress=false "$@"
