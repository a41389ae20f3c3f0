#!/usr/bin/env bash
# Integration: dsrun starts 2 ranks of examples/train_mlp; their per-step global-batch losses must equal a
# single process's (which runs the same global batch with 2 accumulation steps) within relative TOL, and
# every rank must report its model state. TOL is 1e-5 for fp32; fp16/bf16 runs round gradients that are
# summed in another order (2 ranks' averages vs 2 accumulated micro-steps), so they get a looser TOL.
# usage: train_mlp_dsrun_test.sh DSRUN TRAIN_MLP CONFIG [TOL=1e-5]
set -euo pipefail
DSRUN=$1 TRAIN=$2 CONFIG=$3 TOL=${4:-1e-5}
[ -x "$DSRUN" ] || { echo "FAIL: dsrun not built at $DSRUN" >&2; exit 1; }
[ -x "$TRAIN" ] || { echo "FAIL: train_mlp not built at $TRAIN" >&2; exit 1; }
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--deepspeed_config "$CONFIG" --hidden 64 --layers 3 --steps 8 --seed 5)

# A free port for the single-rank run is not needed (world size 1 uses an in-memory store).
env -u RANK -u WORLD_SIZE -u LOCAL_RANK "$TRAIN" "${args[@]}" > "$tmp/one.out" 2>&1 ||
  { echo "FAIL: single-process run failed:" >&2; cat "$tmp/one.out" >&2; exit 1; }
"$DSRUN" --num_gpus 2 --master_port 0 --no_python "$TRAIN" "${args[@]}" > "$tmp/two.out" 2>&1 ||
  { echo "FAIL: dsrun run failed:" >&2; cat "$tmp/two.out" >&2; exit 1; }

# dsrun may prefix forwarded lines ("host:rank | "); keep what follows the last "| ".
strip() { sed -e 's/^.*| //' "$1"; }
strip "$tmp/one.out" | grep '^step ' > "$tmp/one.steps" || true
strip "$tmp/two.out" | grep '^step ' > "$tmp/two.steps" || true
[ "$(wc -l < "$tmp/one.steps")" -eq 8 ] || { echo "FAIL: single run printed $(wc -l < "$tmp/one.steps") step lines" >&2; cat "$tmp/one.out" >&2; exit 1; }
[ "$(wc -l < "$tmp/two.steps")" -eq 8 ] || { echo "FAIL: dsrun run printed $(wc -l < "$tmp/two.steps") step lines" >&2; cat "$tmp/two.out" >&2; exit 1; }
paste "$tmp/one.steps" "$tmp/two.steps" | awk -v tol="$TOL" '
  { if ($1 != "step" || $2 != $6) { print "FAIL: step lines do not line up: " $0; bad = 1; next }
    d = $4 - $8; if (d < 0) d = -d; a = $4 < 0 ? -$4 : $4
    if (d > tol * a) { printf "FAIL: step %s loss %s (1 rank) vs %s (2 ranks)\n", $2, $4, $8; bad = 1 }
    else printf "ok: step %s loss %s (1 rank) %s (2 ranks)\n", $2, $4, $8 }
  END { exit bad }' >&2
first=$(awk 'NR == 1 {print $4}' "$tmp/one.steps"); last=$(awk 'END {print $4}' "$tmp/one.steps")
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f) }' || { echo "FAIL: loss did not decrease ($first -> $last)" >&2; exit 1; }
for r in 0 1; do
  strip "$tmp/two.out" | grep -q "^rank $r model_state_bytes [0-9]* peak_rss_mb " ||
    { echo "FAIL: rank $r did not report model_state_bytes" >&2; cat "$tmp/two.out" >&2; exit 1; }
done
echo "ok: 2 ranks through dsrun match 1 process for 8 steps within relative $TOL ($CONFIG)"
