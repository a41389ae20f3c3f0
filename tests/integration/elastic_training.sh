#!/usr/bin/env bash
# Elastic training that resumes (docs/elastic_training.md): examples/train_mlp on 4 hosts of the netns
# cluster (min 2, max 4) with --checkpoint_dir, an elasticity block keeping the global batch at 24; one
# agent is killed -9 mid-run. The job re-forms on 3 hosts, every rank resumes from the last checkpoint with
# restart count 1, and the loss of every step equals one uninterrupted process (fp32, relative 1e-5), as
# if the world had changed size at that step. Then a rank SIGSTOPped mid-run is found by --hang_timeout_s:
# its stacks are written and the job restarts. Then a host is killed while a checkpoint is being saved: the
# previous checkpoint loads. Needs root. Sharness style.
# usage: elastic_training.sh DSRUN DSRUN_AGENT TRAIN_MLP CONFIG
set -u
DSRUN=$(readlink -f "${1:?usage: elastic_training.sh DSRUN DSRUN_AGENT TRAIN_MLP CONFIG}")
AGENT=$(readlink -f "${2:?}") TRAIN=$(readlink -f "${3:?}") CONFIG=$(readlink -f "${4:?}")
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
CLUSTER=$ROOT/scripts/test_cluster.sh
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
ST=$DSRUN_CLUSTER_STATE TOL=1e-5
require_root "the elastic training test"
WORK=$(mktemp -d /tmp/dsrun-elastic-train.XXXXXX); chmod 755 "$WORK"
cleanup() { "$CLUSTER" down 4 >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
latest_at_least() { local s; s=$(sed 's/global_step//' "$1/latest" 2>/dev/null) && [ "${s:-0}" -ge "$2" ]; }
strip() { sed -e 's/^.*| //' "$1"; }

"$DSRUN" --make_tls "$WORK/tls" >/dev/null
chmod -R go+rX "$WORK/tls"; chmod 600 "$WORK/tls/key.pem"
if ! "$CLUSTER" up 4 >"$WORK/up.log" 2>&1; then not_ok "test cluster comes up"; tail -3 "$WORK/up.log"; exit 1; fi
"$CLUSTER" agents 4 "$AGENT" "$WORK/tls" >"$WORK/agents.log" 2>&1 || { not_ok "agents start"; cat "$WORK/agents.log"; exit 1; }
printf 'dsn1 slots=1\ndsn2 slots=1\ndsn3 slots=1\ndsn4 slots=1\n' >"$WORK/hostfile"
# The ranks get what DS_ENV_FILE lists (DeepSpeed's .deepspeed_env): one thread each on this small machine.
printf 'OMP_NUM_THREADS=1\n' >"$WORK/env"
args=(--deepspeed_config "$CONFIG" --hidden 256 --layers 3 --seed 7 --steps 40)

env -u RANK -u WORLD_SIZE OMP_NUM_THREADS=1 "$TRAIN" "${args[@]}" >"$WORK/whole.out" 2>&1 ||
  { not_ok "the uninterrupted one-process run"; tail -5 "$WORK/whole.out"; }
grep '^step ' "$WORK/whole.out" >"$WORK/whole.steps"

# 1. 4 hosts, one agent killed -9 after the checkpoint of step 6.
mkdir -p "$WORK/ckpt"
(cd "$WORK" && DS_ENV_FILE="$WORK/env" "$DSRUN" --launcher agent --tls_dir "$WORK/tls" -H "$WORK/hostfile" \
   --elastic_training --min_elastic_nodes 2 --max_elastic_nodes 4 --master_addr 10.77.0.11 --kill_grace_s 3 \
   --no_python "$TRAIN" "${args[@]}" --checkpoint_dir "$WORK/ckpt" --save_every 2 >"$WORK/kill.out" 2>"$WORK/kill.err") &
dpid=$!
if wait_for 120 latest_at_least "$WORK/ckpt" 6; then
  kill -9 "$(cat "$ST/agent_dsn3.pid")"
  killed_at=$(cat "$WORK/ckpt/latest")
else
  not_ok "the job reached its step-6 checkpoint"
fi
wait_for 300 sh -c "! kill -0 $dpid 2>/dev/null" || { not_ok "dsrun ended"; kill -9 "$dpid"; }
wait "$dpid"; rc=$?
check "an agent killed mid-training: the job re-forms and finishes (exit 0)" test "$rc" = 0
check "the job ran to step 40" test "$(cat "$WORK/ckpt/latest" 2>/dev/null)" = global_step40
check "it re-formed on 3 hosts with world size 3" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; host lost: agent dsn3:29600: .*\); hosts lost: dsn3; added: none; world size 4 -> 3 on 3 host\(s\)" "$WORK/kill.err"
for r in 0 1 2; do
  check "rank $r of the new world resumed with restart count 1" \
    grep -qE "resumed from step [0-9]+ rank $r world_size 3 restart_count 1 \(DSRUN_RESTART_COUNT\)$" "$WORK/kill.out"
done
echo "# killed after ${killed_at:-?}; resumed from: $(grep -o 'resumed from step [0-9]*' "$WORK/kill.out" | sort -u | tr '\n' ' ')"
# The last report of each step (a step after the checkpoint ran twice) against the one process.
strip "$WORK/kill.out" | grep '^step ' | awk '{last[$2] = $0} END {for (s = 1; s <= 40; s++) print last[s]}' \
  >"$WORK/kill.steps"
check "every step's loss equals the uninterrupted run's (relative $TOL)" awk -v tol="$TOL" '
  NR == FNR { ref[$2] = $4; next }
  { d = $4 - ref[$2]; if (d < 0) d = -d; a = ref[$2] < 0 ? -ref[$2] : ref[$2]
    if (!($2 in ref) || d > tol * a) { printf "# step %s: %s vs %s\n", $2, $4, ref[$2]; bad = 1 } n++ }
  END { exit bad || n != 40 }' "$WORK/whole.steps" "$WORK/kill.steps"
[ "$rc" = 0 ] || { sed 's/^/# /' "$WORK/kill.err" | tail -20; }

# 2. A SIGSTOPped rank: no progress for --hang_timeout_s 3, stacks written, restart, finish.
"$CLUSTER" agents 4 "$AGENT" "$WORK/tls" >>"$WORK/agents.log" 2>&1 || not_ok "dsn3's agent restarts"
rm -rf "$WORK/ckpt2"; mkdir -p "$WORK/ckpt2" "$WORK/logs"
(cd "$WORK" && DS_ENV_FILE="$WORK/env" "$DSRUN" --launcher agent --tls_dir "$WORK/tls" -H "$WORK/hostfile" \
   --elastic_training --min_elastic_nodes 2 --master_addr 10.77.0.11 --kill_grace_s 2 --hang_timeout_s 3 \
   --enable_each_rank_log "$WORK/logs" --no_python "$TRAIN" "${args[@]}" --checkpoint_dir "$WORK/ckpt2" \
   --save_every 2 >"$WORK/hang.out" 2>"$WORK/hang.err") &
dpid=$!
rank_pid() {  # rank_pid RANK: the pid of the job's rank RANK (one /proc for every namespace)
  for e in $(grep -l "DSRUN_PROGRESS_FILE=" /proc/[0-9]*/environ 2>/dev/null); do
    tr '\0' '\n' <"$e" 2>/dev/null | grep -qx "RANK=$1" && tr '\0' '\n' <"$e" | grep -q "^DSRUN_JOB_ID=" &&
      { p=${e#/proc/}; echo "${p%/environ}"; return 0; }
  done; return 1
}
if wait_for 120 latest_at_least "$WORK/ckpt2" 4 && pid=$(rank_pid 2); then
  kill -STOP "$pid"
else
  not_ok "the hang job reached step 4 and rank 2 was found"
fi
wait_for 300 sh -c "! kill -0 $dpid 2>/dev/null" || { not_ok "dsrun ended"; kill -9 "$dpid"; }
wait "$dpid"; rc=$?
check "a stopped rank: hang detected, the job restarts and finishes" test "$rc" = 0
check "the restart line names the hang and where the stacks are" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; rank failure: no progress for 3 s \(--hang_timeout_s\) by ranks? .*; stacks of every rank: $WORK/logs/dsrun-hang-" "$WORK/hang.err"
grep -qE "^dsrun: elastic restart .*stacks of every rank: $WORK/logs/dsrun-hang-" "$WORK/hang.err" ||
  { echo "# the restart lines:"; grep "elastic restart" "$WORK/hang.err" | sed 's/^/# /'; }
stackdir=$(ls -d "$WORK"/logs/dsrun-hang-* 2>/dev/null | head -1)
check "a stack file per rank was written" test -n "$stackdir" -a "$(ls "$stackdir" 2>/dev/null | wc -l)" = 4
check "the stopped rank's stacks say something" test -s "$stackdir/rank2.txt"
[ "$rc" = 0 ] || { sed 's/^/# /' "$WORK/hang.err" | tail -20; }

# 3. A host killed during a checkpoint save (its agent killed -9 while global_step8.tmp is being written; a larger
#    model so the save takes long enough to be caught): the save never completes, `latest` still names step 4,
#    the job re-forms on 3 hosts, every rank resumes from step 4 and the job finishes.
"$CLUSTER" agents 4 "$AGENT" "$WORK/tls" >>"$WORK/agents.log" 2>&1 || not_ok "the agents restart"
sed 's/"reduce_bucket_size": 2000, "allgather_bucket_size": 2000/"reduce_bucket_size": 50000000, "allgather_bucket_size": 50000000/' \
  "$CONFIG" >"$WORK/big.json"
rm -rf "$WORK/ckpt3"; mkdir -p "$WORK/ckpt3"
(cd "$WORK" && DS_ENV_FILE="$WORK/env" "$DSRUN" --launcher agent --tls_dir "$WORK/tls" -H "$WORK/hostfile" \
   --elastic_training --min_elastic_nodes 2 --master_addr 10.77.0.11 --kill_grace_s 2 --no_python "$TRAIN" \
   --deepspeed_config "$WORK/big.json" --hidden 2048 --layers 3 --seed 7 --steps 12 --checkpoint_dir "$WORK/ckpt3" \
   --save_every 4 >"$WORK/save.out" 2>"$WORK/save.err") &
dpid=$!
caught=""
if wait_for 300 latest_at_least "$WORK/ckpt3" 4; then
  # Busy-wait (no sleep): the staging directory lives for the length of one save.
  for _ in $(seq 2000000); do
    if [ -d "$WORK/ckpt3/global_step8.tmp" ]; then
      kill -9 "$(cat "$ST/agent_dsn3.pid")"; caught=$(cat "$WORK/ckpt3/latest"); break
    fi
    kill -0 "$dpid" 2>/dev/null || break
  done
else
  not_ok "the save job reached its step-4 checkpoint"
fi
wait_for 300 sh -c "! kill -0 $dpid 2>/dev/null" || { not_ok "dsrun ended"; kill -9 "$dpid"; }
wait "$dpid"; rc=$?
check "dsn3 was killed while the step-8 save was staged, before it was published" test "$caught" = global_step4
check "a host lost during a save: the job re-forms and finishes (exit 0)" test "$rc" = 0
check "every rank of the new world resumed from the previous checkpoint (step 4)" \
  test "$(grep -cE 'resumed from step 4 rank [0-2] world_size 3 restart_count 1 ' "$WORK/save.out")" = 3
check "the job ran to step 12" test "$(cat "$WORK/ckpt3/latest" 2>/dev/null)" = global_step12
[ "$rc" = 0 ] || { sed 's/^/# /' "$WORK/save.err" | tail -20; }

finish
