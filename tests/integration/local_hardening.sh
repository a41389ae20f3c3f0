#!/bin/bash
# Launcher hardening, second round, on one machine with the local backend:
#   local_hardening.sh DSRUN [TORCHRUN_PYTHON]
# - item 5: torchrun's variables equal what Debian's torchrun (TORCHRUN_PYTHON -m torch.distributed.run, default
#   /usr/bin/python3) sets for the same world: one node of 2 ranks (both run), two nodes of 2 (torchrun's two
#   agents on this host against dsrun --dry_run's plan);
# - item 6: --max_restarts 2 restarts the whole world twice (TORCHELASTIC_RESTART_COUNT 0, 1, 2, a new job id each
#   time) and succeeds; --max_restarts 1 gives up with the failure's code; no --max_restarts: no restart;
# - item 2: kill -9 of dsrun leaves none of the ranks' children, also one that left the process group (setsid);
# - item 4: --exit_timeout_s makes the job fail, naming the rank it stopped;
# - item 7: --hang_timeout_s 2: rank 0 stops moving its step at 3, the stacks of both ranks are written and the
#   job fails naming rank 0; ranks that never write a step are never judged (the job ends normally);
# - item 3: a rank frozen in state D (cgroup v1 freezer; root) is named with its state 10 s after SIGKILL and
#   dsrun exits with the first failure's code; without a freezer that check FAILS, saying why.
set -u
DSRUN=$(readlink -f "${1:?usage: local_hardening.sh DSRUN [TORCHRUN_PYTHON]}")
TPY=${2:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
RANK_SH=$HERE/hardening_rank.sh
. "$HERE/lib.sh"
WORK=$(mktemp -d /tmp/dsrun-local-hardening.XXXXXX); chmod 755 "$WORK"
FREEZER=""
cleanup() {
  if [ -n "$FREEZER" ] && [ -d "$FREEZER" ]; then
    echo THAWED > "$FREEZER/freezer.state" 2>/dev/null
    for p in $(cat "$FREEZER/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    for _ in $(seq 50); do rmdir "$FREEZER" 2>/dev/null && break; sleep 0.1; done
  fi
  rm -rf "$WORK" /tmp/dsrun-hardening-local-*
}
trap cleanup EXIT
trap 'exit 130' INT TERM
show() { echo "#   --- $1:"; sed 's/^/#   | /' "$1" 2>/dev/null | tail -20; }
# below the kernel's ephemeral range (32768-60999), so no outgoing connection holds it
port() { echo $((31000 + RANDOM % 1700)); }
# ended PID: the background child PID has exited (a zombie until `wait` counts as ended)
ended() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ] || ! kill -0 "$1" 2>/dev/null; }

# --- item 5: torchrun's variables, against Debian's torchrun -------------------------------------------------------
if ! "$TPY" -c 'import torch.distributed.run' 2>/dev/null; then
  not_ok "torchrun comparison needs $TPY with torch (Debian: python3-torch); not found"
else
  mkdir -p "$WORK/t1" "$WORK/d1"
  # -r/-t spelled out: torch 1.13's default "0" parses to None under Python 3.11 (Std.from_str) and torchrun dies.
  STD="-r 1 -t 0:1,1:1"
  # shellcheck disable=SC2086
  (cd "$WORK" && timeout 120 "$TPY" -m torch.distributed.run $STD --nnodes 1 --nproc_per_node 2 \
      --master_port "$(port)" --max_restarts 2 --rdzv_id torchrun-id --no_python "$RANK_SH" "$WORK/t1" torchrun) \
      >"$WORK/t1.log" 2>&1
  timeout 120 "$DSRUN" --num_gpus 2 --master_port 0 --max_restarts 2 --no_python --no_local_rank "$RANK_SH" \
      "$WORK/d1" torchrun >"$WORK/d1.log" 2>&1
  same=yes
  for r in 0 1; do
    # TORCHELASTIC_RUN_ID is the rendezvous id (--rdzv_id) there and the job id here: compared apart.
    diff <(grep -v '^TORCHELASTIC_RUN_ID=' "$WORK/t1/tr.$r" 2>&1) <(grep -v '^TORCHELASTIC_RUN_ID=' "$WORK/d1/tr.$r" 2>&1) \
      >"$WORK/diff1.$r" || same=no
  done
  id=$(grep -h '^TORCHELASTIC_RUN_ID=' "$WORK/d1/tr.0" 2>/dev/null | cut -d= -f2)
  if [ "$same" = yes ] && [ -s "$WORK/t1/tr.1" ] && grep -qx 'TORCHELASTIC_RUN_ID=torchrun-id' "$WORK/t1/tr.0" &&
     [ -n "$id" ] && [ "$id" != "<unset>" ]; then
    ok "local: 2 ranks get torchrun's variables exactly as Debian's torchrun sets them (run id: the job's, $id)"
  else
    not_ok "local: torchrun's variables equal Debian torchrun's"; show "$WORK/diff1.0"; show "$WORK/diff1.1"; show "$WORK/t1.log"; show "$WORK/d1.log"
  fi
  # Two nodes of 2: torchrun's two agents (node ranks 0 and 1) on this host, dsrun's plan of the same world.
  p=$(port); mkdir -p "$WORK/t2"
  for node in 0 1; do
    # shellcheck disable=SC2086
    (cd "$WORK" && timeout 120 "$TPY" -m torch.distributed.run $STD --nnodes 2 --node_rank $node --nproc_per_node 2 \
        --master_addr 127.0.0.1 --master_port "$p" --no_python "$RANK_SH" "$WORK/t2" torchrun) >"$WORK/t2.$node.log" 2>&1 &
  done
  wait
  printf 'node-a slots=2\nnode-b slots=2\n' > "$WORK/hf2"
  "$DSRUN" -H "$WORK/hf2" --master_addr 127.0.0.1 --launcher pdsh --dry_run --no_python "$RANK_SH" x torchrun \
      >"$WORK/plan2.json" 2>"$WORK/plan2.err"
  bad=""
  for r in 0 1 2 3; do
    "$TPY" - "$WORK/plan2.json" "$r" > "$WORK/d2.$r" <<'PY'
import json, sys
env = json.load(open(sys.argv[1]))["ranks"][int(sys.argv[2])]["env"]
for v in ("RANK LOCAL_RANK WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE LOCAL_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE ROLE_NAME "
          "TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS").split():
    print(f"{v}={env.get(v, '<unset>')}")
PY
    diff <(grep -v '^TORCHELASTIC_RUN_ID=' "$WORK/t2/tr.$r" 2>&1) "$WORK/d2.$r" >"$WORK/diff2.$r" || bad="$bad $r"
  done
  if [ -z "$bad" ]; then ok "two nodes of 2 ranks: dsrun's plan gives every rank torchrun's variables (torchrun 1.13, two agents)"
  else not_ok "two nodes: torchrun's variables differ for rank(s)$bad"; for r in $bad; do show "$WORK/diff2.$r"; done; show "$WORK/t2.0.log"; show "$WORK/plan2.err"; fi
fi

# --- item 6: --max_restarts on a job that is not elastic ----------------------------------------------------------
d=$WORK/restart2; mkdir -p "$d"
timeout 120 "$DSRUN" --num_gpus 2 --master_port 0 --max_restarts 2 --kill_grace_s 2 --no_python --no_local_rank \
  "$RANK_SH" "$d" restart 2 >"$d/out" 2>"$d/err"
rc=$?
counts=$(awk '{print $2}' "$d/attempts" 2>/dev/null | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
ids=$(awk '{print $3}' "$d/attempts" 2>/dev/null | sort -u | wc -l)
if [ "$rc" = 0 ] && [ "$counts" = "0:2 1:2 2:2 " ] && [ "$ids" = 3 ] &&
   grep -q "restarting the whole world (restart 1 of 2, TORCHELASTIC_RESTART_COUNT=1): the job failed with exit code 5" "$d/err" &&
   grep -q "restart summary: 2 restart(s) of 2 (1: exit code 5; 2: exit code 5)" "$d/err"; then
  ok "local --max_restarts 2: the world of 2 ranks ran 3 times (restart count 0, 1, 2; 3 job ids), then exit 0"
else not_ok "local --max_restarts 2 restarts the whole world (rc $rc, attempts: $counts, ids: $ids)"; show "$d/err"; fi
d=$WORK/restart1; mkdir -p "$d"
timeout 120 "$DSRUN" --num_gpus 2 --master_port 0 --max_restarts 1 --kill_grace_s 2 --no_python --no_local_rank \
  "$RANK_SH" "$d" restart 5 >"$d/out" 2>"$d/err"
rc=$?
if [ "$rc" = 5 ] && [ "$(wc -l < "$d/attempts")" = 4 ] && grep -q "no restart left (--max_restarts 1 used)" "$d/err"; then
  ok "local --max_restarts 1: one restart, then the failure's code 5"
else not_ok "local --max_restarts 1 gives up after one restart (rc $rc)"; show "$d/err"; fi
d=$WORK/restart0; mkdir -p "$d"
timeout 120 "$DSRUN" --num_gpus 2 --master_port 0 --kill_grace_s 2 --no_python --no_local_rank \
  "$RANK_SH" "$d" restart 5 >"$d/out" 2>"$d/err"
rc=$?
if [ "$rc" = 5 ] && [ "$(wc -l < "$d/attempts")" = 2 ] && ! grep -q restart "$d/err"; then
  ok "local without --max_restarts: no restart (torchrun's default 0), the failure's code 5"
else not_ok "local without --max_restarts does not restart (rc $rc)"; show "$d/err"; fi

# --- item 2: kill -9 of dsrun leaves nothing the ranks started -----------------------------------------------------
d=$WORK/kids; mkdir -p "$d"
"$DSRUN" --num_gpus 2 --master_port 0 --kill_grace_s 2 --no_python --no_local_rank "$RANK_SH" "$d" kids >"$d/out" 2>"$d/err" &
pid=$!
if ! wait_for 30 test -s "$d/kids.1" -a -s "$d/kids.0"; then not_ok "local: 2 ranks start their children"; show "$d/err"; kill -9 $pid
else
  kill -9 $pid; wait $pid 2>/dev/null
  pids=$(cat "$d"/kids.*)
  alive() { local p left=""; for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done; echo "$left"; }
  all_gone() { [ -z "$(alive)" ]; }
  if wait_for 15 all_gone; then
    ok "local: kill -9 of dsrun leaves none of the 2 ranks, their children, nor the children in a session of their own"
  else not_ok "local: kill -9 of dsrun leaves nothing within 15 s" "left: $(alive)"; show "$d/err"; fi
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
fi

# --- item 4: the exit timeout fails the job, naming the ranks it stopped -------------------------------------------
d=$WORK/exit-timeout; mkdir -p "$d"
timeout 120 "$DSRUN" --num_gpus 2 --master_port 0 --exit_timeout_s 1 --kill_grace_s 2 --no_python --no_local_rank \
  /bin/sh -c 'if [ "$RANK" = 0 ]; then exit 0; fi; trap "exit 0" TERM; while :; do sleep 1; done' >"$d/out" 2>"$d/err"
rc=$?
if [ "$rc" = 1 ] && grep -q "dsrun: exit timeout: rank 1 (localhost pid [0-9]*) still running 1s after rank 0 (localhost pid [0-9]*) finished cleanly; stopped it, the job fails" "$d/err"; then
  ok "local --exit_timeout_s 1: rank 1 (exits 0 on SIGTERM) is named and the job fails with 1"
else not_ok "local --exit_timeout_s fails the job, naming rank 1 (rc $rc)"; show "$d/err"; fi

# --- item 7: hang detection on the local backend ----------------------------------------------------------------------
d=$WORK/hang; mkdir -p "$d"
(cd "$d" && timeout 120 "$DSRUN" --num_gpus 2 --master_port 0 --hang_timeout_s 2 --kill_grace_s 2 --no_python \
  --no_local_rank "$RANK_SH" "$d" progress >"$d/out" 2>"$d/err")
rc=$?
stacks=$(ls -d "$d"/dsrun-hang-* 2>/dev/null | head -1)
if [ "$rc" = 1 ] && grep -q "dsrun: no progress for 2 s (--hang_timeout_s) by rank 0 (step 3) on localhost; stacks of every rank: ./dsrun-hang-" "$d/err" &&
   [ -s "$stacks/rank0.txt" ] && [ -s "$stacks/rank1.txt" ]; then
  ok "local --hang_timeout_s 2: rank 0 stuck at step 3 is named, both ranks' stacks are written, the job fails (1)"
else not_ok "local --hang_timeout_s names the stuck rank and writes the stacks (rc $rc, stacks: '$stacks')"; show "$d/err"; fi
d=$WORK/silent; mkdir -p "$d"
timeout 120 "$DSRUN" --num_gpus 2 --master_port 0 --hang_timeout_s 1 --no_python --no_local_rank "$RANK_SH" "$d" silent \
  >"$d/out" 2>"$d/err"
rc=$?
if [ "$rc" = 0 ] && ! grep -q "no progress" "$d/err"; then
  ok "local --hang_timeout_s 1: ranks that never report a step run 3 s to their end and are not judged hung"
else not_ok "local: ranks that never report progress are not judged (rc $rc)"; show "$d/err"; fi

# --- item 3: a rank that outlives SIGKILL (state D) ------------------------------------------------------------------
if [ "$(id -u)" != 0 ] || [ ! -w /sys/fs/cgroup/freezer ]; then
  not_ok "local: a rank in state D is given up (needs root and the cgroup v1 freezer to freeze a rank; uid $(id -u), /sys/fs/cgroup/freezer $( [ -d /sys/fs/cgroup/freezer ] && echo 'not writable' || echo absent))"
else
  FREEZER=/sys/fs/cgroup/freezer/dsrun-hardening-$$; mkdir "$FREEZER"
  d=$WORK/stuck; mkdir -p "$d"
  "$DSRUN" --num_gpus 2 --master_port 0 --kill_grace_s 1 --no_python --no_local_rank "$RANK_SH" "$d" stuck >"$d/out" 2>"$d/err" &
  pid=$!
  if wait_for 30 test -s "$d/pid.1" -a -s "$d/pid.0"; then
    echo "$(cat "$d/pid.1")" > "$FREEZER/cgroup.procs" && echo FROZEN > "$FREEZER/freezer.state"
    wait_for 10 grep -qx FROZEN "$FREEZER/freezer.state"
    touch "$d/go"
    # 1 s grace, 10 s kill wait, slack for a loaded machine: a hang is what this guards against, not a timing.
    wait_for 60 ended $pid
    if ! ended $pid; then kill -9 $pid; not_ok "local: dsrun ends while a rank is stuck in state D (still running after 60 s)"; show "$d/err"
    else
      wait $pid; rc=$?
      if [ "$rc" = 3 ] && grep -q "dsrun: rank 1 (localhost pid $(cat "$d/pid.1")) is still alive 10s after SIGKILL, in state D (disk sleep); giving up on it" "$d/err"; then
        ok "local: a rank frozen in state D is named with its state 10 s after SIGKILL and dsrun exits with rank 0's code 3"
      else not_ok "local: a rank in state D is named and dsrun exits 3 (rc $rc)"; show "$d/err"; fi
    fi
  else not_ok "local: 2 ranks start for the state D check"; show "$d/err"; kill -9 $pid 2>/dev/null; fi
fi
finish
