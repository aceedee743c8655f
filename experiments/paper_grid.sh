#!/usr/bin/env bash
# The paper's experiments on Score Four as Hydra multiruns (docs/paper.md explains them):
#
#   experiments/paper_grid.sh grid [key=value ...]      5 networks x 2 regimes (self-play, vs benchmark), SEEDS each,
#                                                       with biases (the bias study's verdict)
#   experiments/paper_grid.sh bias [key=value ...]      structured_deep vs benchmark, without and with biases
#   experiments/paper_grid.sh fidelity [key=value ...]  structured_deep with biases, both regimes, num_envs 16 and 64 at
#                                                       the same, sqrt(B)-scaled and B-scaled learning rates (the online
#                                                       arm is the grid's structured_deep rows)
#
# Each job trains its SEEDS runs side by side in one process (seeds=SEEDS, from seed FIRST_SEED), each run
# online (one game at a time, an update after every ply) in <job folder>/seed_<s>/.
# Settings from the environment (defaults in brackets):
#   SEEDS [3]  FIRST_SEED [0]  EPISODES [200000]  EVAL_EVERY [10000]  EVAL_GAMES [1000]
#   LAUNCHER [joblib: parallel jobs on this machine | slurm: one SLURM job per job, configs/hydra/launcher/slurm.yaml]
#   JOBS [-1: one joblib worker per core]  SWEEP_DIR [runs/paper/<mode>]  PYTHON [python]
# Extra key=value arguments go last to ttt.train and win over the above, e.g. network.bias=true.
# Needs the sweep extra: pip install -e '.[sweep]'. Run the same command with resume=true to continue it.
set -euo pipefail

mode=${1:-}
eval_every=${EVAL_EVERY:-10000}
eval_games=${EVAL_GAMES:-1000}
case "$mode" in
  grid)
    sweeps=("+experiment=dqn_444_gravity,dqn_444_gravity_vs_benchmark network=structured_deep,structured_small,mlp_small,mlp_deep,mlp_wide network.bias=true") ;;
  bias)
    sweeps=("+experiment=dqn_444_gravity_vs_benchmark network=structured_deep network.bias=false,true") ;;
  fidelity)
    # lr 0.005 is the paper's; sqrt(16) x = 0.02, 16 x = 0.08; sqrt(64) x = 0.04, 64 x = 0.32
    sweeps=("+experiment=dqn_444_gravity,dqn_444_gravity_vs_benchmark network=structured_deep network.bias=true num_envs=16 agent.lr=0.005,0.02,0.08"
            "+experiment=dqn_444_gravity,dqn_444_gravity_vs_benchmark network=structured_deep network.bias=true num_envs=64 agent.lr=0.005,0.04,0.32") ;;
  *)
    sed -n '2,17p' "$0" >&2
    exit 2 ;;
esac
shift

LAUNCHER=${LAUNCHER:-joblib}
launcher=("hydra/launcher=$LAUNCHER")
if [ "$LAUNCHER" = joblib ]; then
  launcher+=("hydra.launcher.n_jobs=${JOBS:--1}")
fi

for i in "${!sweeps[@]}"; do
  dir=${SWEEP_DIR:-runs/paper/$mode}
  [ "${#sweeps[@]}" -gt 1 ] && dir="$dir/part$((i + 1))"  # part1: num_envs 16, part2: 64
  # shellcheck disable=SC2086  # each sweep string is a list of overrides
  (set -x; "${PYTHON:-python}" -m ttt.train -m "${launcher[@]}" "hydra.sweep.dir=$dir" ${sweeps[$i]} \
    "seed=${FIRST_SEED:-0}" "seeds=${SEEDS:-3}" "episodes=${EPISODES:-200000}" "eval_every=$eval_every" \
    "eval_games=$eval_games" "agent.final_eval_games=$eval_games" progress=false "$@")
done
