#!/usr/bin/env bash
# Integration: examples/train_mlp --save_dir/--save_every/--load_dir. dsrun runs 2 ranks for 6 of 10 steps,
# saving after steps 3 and 6; a single process then loads the newest checkpoint (re-partitioned from 2 ranks
# to 1 for ZeRO) and must print `step 7` .. `step 10` with the losses of an uninterrupted 10-step run
# (relative TOL: 1e-5 for fp32; fp16/bf16 first steps on 2 ranks round differently from 1 rank's). Loading
# a directory with no checkpoint starts from scratch.
# usage: train_mlp_resume_test.sh DSRUN TRAIN_MLP CONFIG [TOL=1e-5]
set -euo pipefail
DSRUN=$1 TRAIN=$2 CONFIG=$3 TOL=${4:-1e-5}
[ -x "$DSRUN" ] || { echo "FAIL: dsrun not built at $DSRUN" >&2; exit 1; }
[ -x "$TRAIN" ] || { echo "FAIL: train_mlp not built at $TRAIN" >&2; exit 1; }
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--deepspeed_config "$CONFIG" --hidden 64 --layers 3 --seed 5)
strip() { sed -e 's/^.*| //' "$1"; }
single() { env -u RANK -u WORLD_SIZE -u LOCAL_RANK "$TRAIN" "${args[@]}" "$@"; }

single --steps 10 > "$tmp/whole.out" 2>&1 || { echo "FAIL: uninterrupted run failed:" >&2; cat "$tmp/whole.out" >&2; exit 1; }
"$DSRUN" --num_gpus 2 --master_port 0 --no_python "$TRAIN" "${args[@]}" --steps 6 \
  --save_dir "$tmp/ckpt" --save_every 3 > "$tmp/first.out" 2>&1 ||
  { echo "FAIL: dsrun run with --save_dir failed:" >&2; cat "$tmp/first.out" >&2; exit 1; }
[ "$(cat "$tmp/ckpt/latest")" = global_step6 ] || { echo "FAIL: latest is '$(cat "$tmp/ckpt/latest")', expected global_step6" >&2; exit 1; }
[ -d "$tmp/ckpt/global_step3" ] || { echo "FAIL: no checkpoint after step 3" >&2; ls -R "$tmp/ckpt" >&2; exit 1; }
single --steps 10 --load_dir "$tmp/ckpt" > "$tmp/rest.out" 2>&1 ||
  { echo "FAIL: resumed run failed:" >&2; cat "$tmp/rest.out" >&2; exit 1; }
grep -q "loaded checkpoint .*global_step6 (saved by 2 ranks) at global step 6" "$tmp/rest.out" ||
  { echo "FAIL: resumed run did not report its checkpoint:" >&2; cat "$tmp/rest.out" >&2; exit 1; }

strip "$tmp/whole.out" | grep '^step ' | tail -n 4 > "$tmp/whole.steps"
strip "$tmp/rest.out" | grep '^step ' > "$tmp/rest.steps" || true
[ "$(awk '{print $2}' "$tmp/rest.steps" | tr '\n' ' ')" = "7 8 9 10 " ] ||
  { echo "FAIL: resumed run printed steps '$(awk '{print $2}' "$tmp/rest.steps" | tr '\n' ' ')', expected 7 8 9 10" >&2; exit 1; }
paste "$tmp/whole.steps" "$tmp/rest.steps" | awk -v tol="$TOL" '
  { d = $4 - $8; if (d < 0) d = -d; a = $4 < 0 ? -$4 : $4
    if ($2 != $6 || d > tol * a) { printf "FAIL: step %s loss %s (uninterrupted) vs step %s %s (resumed)\n", $2, $4, $6, $8; bad = 1 }
    else printf "ok: step %s loss %s (uninterrupted) %s (resumed from 2 ranks on 1)\n", $2, $4, $8 }
  END { exit bad }' >&2

mkdir -p "$tmp/empty"
single --steps 2 --load_dir "$tmp/empty" > "$tmp/empty.out" 2>&1 || { echo "FAIL: run with an empty --load_dir failed" >&2; cat "$tmp/empty.out" >&2; exit 1; }
grep -q "no checkpoint to load" "$tmp/empty.out" && [ "$(strip "$tmp/empty.out" | grep -c '^step ')" -eq 2 ] ||
  { echo "FAIL: an empty --load_dir did not start from scratch:" >&2; cat "$tmp/empty.out" >&2; exit 1; }
echo "ok: save on 2 ranks after step 6, resume on 1 rank continues at step 7 with the uninterrupted losses ($CONFIG)"
