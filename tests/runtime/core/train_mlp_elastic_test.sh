#!/usr/bin/env bash
# Integration (resume in the runtime): examples/train_mlp --checkpoint_dir D --save_every 3 under
# dsrun with an elasticity block (train_mlp_elastic.json: global batch 24 at 1-4 ranks; micro 4 x 2
# accumulation at 3 ranks, 2 x 3 at 4 ranks, 4 x 3 at 2 ranks). The job runs 4 ranks to step 3, then 3 ranks to
# step 6, then 2 ranks to step 9, each start loading D: every rank says `starting fresh` / `resumed from
# step S` with its world size and DSRUN_RESTART_COUNT, and steps 1-9 have the losses of one uninterrupted
# process (relative 1e-5, fp32). Then a save killed with SIGKILL while its DIR/TAG.tmp is being written
# leaves `latest` on the previous complete checkpoint, which the next start resumes from.
# usage: train_mlp_elastic_test.sh DSRUN TRAIN_MLP CONFIG
set -euo pipefail
DSRUN=$1 TRAIN=$2 CONFIG=$3 TOL=1e-5
[ -x "$DSRUN" ] || { echo "FAIL: dsrun not built at $DSRUN" >&2; exit 1; }
[ -x "$TRAIN" ] || { echo "FAIL: train_mlp not built at $TRAIN" >&2; exit 1; }
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
args=(--deepspeed_config "$CONFIG" --hidden 64 --layers 3 --seed 5)
strip() { sed -e 's/^.*| //' "$1"; }
single() { env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u DSRUN_RESTART_COUNT -u TORCHELASTIC_RESTART_COUNT "$TRAIN" "$@"; }
fail() { echo "FAIL: $1" >&2; [ -n "${2:-}" ] && cat "$2" >&2; exit 1; }

single "${args[@]}" --steps 9 > "$tmp/whole.out" 2>&1 || fail "uninterrupted run failed:" "$tmp/whole.out"
grep -q '^starting fresh rank 0 world_size 1 restart_count unset$' "$tmp/whole.out" ||
  fail "the uninterrupted run did not print its start line:" "$tmp/whole.out"

# world size 4 -> 3 -> 2, one restart count per start, as an elastic launcher would set it
segment() {  # NUM_RANKS STEPS RESTART_COUNT OUT
  DSRUN_RESTART_COUNT=$3 "$DSRUN" --num_gpus "$1" --master_port 0 --no_python "$TRAIN" "${args[@]}" \
    --steps "$2" --checkpoint_dir "$tmp/ckpt" --save_every 3 > "$4" 2>&1 || fail "dsrun with $1 ranks failed:" "$4"
}
segment 4 3 0 "$tmp/a.out"
segment 3 6 1 "$tmp/b.out"
segment 2 9 2 "$tmp/c.out"
expect_start() {  # OUT NUM_RANKS TEXT
  local r
  for ((r = 0; r < $2; r++)); do
    strip "$1" | grep -qx "$3 rank $r world_size $2 restart_count $4 (DSRUN_RESTART_COUNT)" ||
      fail "rank $r did not print '$3 rank $r world_size $2 restart_count $4 (DSRUN_RESTART_COUNT)':" "$1"
  done
}
expect_start "$tmp/a.out" 4 "starting fresh" 0
expect_start "$tmp/b.out" 3 "resumed from step 3" 1
expect_start "$tmp/c.out" 2 "resumed from step 6" 2
[ "$(cat "$tmp/ckpt/latest")" = global_step9 ] || fail "latest is '$(cat "$tmp/ckpt/latest")', expected global_step9"

strip "$tmp/whole.out" | grep '^step ' > "$tmp/whole.steps"
cat "$tmp/a.out" "$tmp/b.out" "$tmp/c.out" | sed -e 's/^.*| //' | grep '^step ' > "$tmp/elastic.steps" || true
[ "$(awk '{print $2}' "$tmp/elastic.steps" | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 9 " ] ||
  fail "the three segments printed steps '$(awk '{print $2}' "$tmp/elastic.steps" | tr '\n' ' ')', expected 1..9"
paste "$tmp/whole.steps" "$tmp/elastic.steps" | awk -v tol="$TOL" '
  { d = $4 - $8; if (d < 0) d = -d; a = $4 < 0 ? -$4 : $4
    w = NR <= 3 ? 4 : NR <= 6 ? 3 : 2
    if ($2 != $6 || d > tol * a) { printf "FAIL: step %s loss %s (1 process) vs %s (%d ranks)\n", $2, $4, $8, w; bad = 1 }
    else printf "ok: step %s loss %s (1 process) %s (%d ranks)\n", $2, $4, $8, w }
  END { exit bad }' >&2

# SIGKILL during a save: a bigger model (16 MB per fp32 copy) so that writing DIR/TAG.tmp takes a while; the
# first time a .tmp directory is seen the process is killed.
big=(--deepspeed_config "$CONFIG" --hidden 1024 --layers 4 --seed 5 --checkpoint_dir "$tmp/kill" --save_every 1)
# The kill may land after the commit renamed TAG.tmp (the check and the kill are not atomic): then the
# .tmp is gone, nothing was interrupted, and the attempt is repeated.
caught=
for attempt in 1 2 3 4 5; do
  rm -rf "$tmp/kill"
  # Not through single(): a backgrounded function is a subshell, and killing it would orphan train_mlp.
  env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u DSRUN_RESTART_COUNT -u TORCHELASTIC_RESTART_COUNT \
    "$TRAIN" "${big[@]}" --steps 100000 > "$tmp/kill.out" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ -e "$tmp/kill/latest" ] && compgen -G "$tmp/kill/global_step*.tmp" > /dev/null; then
      kill -9 "$pid"
      break
    fi
  done
  wait "$pid" 2>/dev/null || true
  pid=
  if compgen -G "$tmp/kill/global_step*.tmp" > /dev/null; then
    caught=$(cd "$tmp/kill" && ls -d global_step*.tmp)
    break
  fi
  echo "attempt $attempt: the kill came after the commit; again" >&2
done
[ -n "$caught" ] || fail "no save could be interrupted in 5 attempts:" "$tmp/kill.out"
latest=$(cat "$tmp/kill/latest")
[ "$latest.tmp" != "$caught" ] || fail "latest names the interrupted save $caught"
saved=${latest#global_step}
single "${big[@]}" --steps $((saved + 1)) > "$tmp/resume.out" 2>&1 ||
  fail "resuming after the killed save ($caught, latest $latest) failed:" "$tmp/resume.out"
grep -qx "resumed from step $saved rank 0 world_size 1 restart_count unset" "$tmp/resume.out" ||
  fail "the run after the killed save did not resume from $latest:" "$tmp/resume.out"
echo "ok: world size 4 -> 3 -> 2 with a constant global batch of 24 has the losses of one process; a save" \
  "killed in $caught left $latest loadable"
