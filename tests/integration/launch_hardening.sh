#!/bin/bash
# Launcher hardening on the test cluster of scripts/test_cluster.sh: 3 network-
# namespace hosts dsn1..dsn3 with sshd and dsrun-agents. Sharness style.
#   launch_hardening.sh DSRUN DSRUN_AGENT
# - agent: a non-UTF-8 argument and environment value arrive byte for byte; MASTER_ADDR is inferred with
#   no ssh in PATH (from the first agent's Welcome); a MASTER_PORT held on dsn1 is named by dsn1's agent
#   before any rank starts, and --master_port 0 is picked there; the mesh probe (on by default) passes on
#   the healthy cluster and names the pair when dsn2 has no route to dsn3, and --no_mesh_probe skips it;
# - kill -9 of dsrun under pdsh, ssh and agent: nothing of the job is left on any host;
# - --exit_timeout_s is job-wide under pdsh, ssh and agent: rank 0 exits 0 on dsn1, the ranks on dsn2/dsn3 are
#   stopped T seconds later, named in one line, and the job fails;
# - torchrun's variables on every rank (pdsh, ssh, agent, slurm); --max_restarts 1 on a job that is not
#   elastic restarts the whole world once (pdsh, ssh, agent); --hang_timeout_s under pdsh and ssh (dsrun-launch);
#   a rank frozen in state D (cgroup v1 freezer) is given up and named under agent and pdsh;
# - slurm: a hostfile naming only dsn2 runs exactly there; a host Slurm does not know is named.
# Needs root (CI runs as root): without it every check FAILS, saying why. The cluster is always torn down.
set -u
DSRUN=$(readlink -f "${1:?usage: launch_hardening.sh DSRUN DSRUN_AGENT}")
AGENT=$(readlink -f "${2:?usage: launch_hardening.sh DSRUN DSRUN_AGENT}")
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER=$ROOT/scripts/test_cluster.sh
RANK_SH=$HERE/multinode_rank.sh
HRANK_SH=$HERE/hardening_rank.sh
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
ST=$DSRUN_CLUSTER_STATE
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
show() { echo "#   --- $1:"; sed 's/^/#   | /' "$1" 2>/dev/null | tail -25; }

if [ "$(id -u)" -ne 0 ]; then
  not_ok "launch hardening needs root for the network-namespace test cluster (CI runs as root); running as uid $(id -u)"
  exit 1
fi
WORK=$(mktemp -d /tmp/dsrun-hardening.XXXXXX); chmod 755 "$WORK"
cleanup() {
  local f id
  for f in "$WORK"/*/env.*; do  # the jobs' kill marks in /tmp (docs/backends.md)
    id=$( { tr '\0' '\n' < "$f" | grep -m1 '^DSRUN_JOB_ID=' | cut -d= -f2-; } 2>/dev/null)
    [ -n "$id" ] && rm -rf "/tmp/dsrun-$id"
  done
  for id in $(awk '{print $3}' "$WORK"/*/attempts 2>/dev/null); do rm -rf "/tmp/dsrun-$id"; done
  for f in /sys/fs/cgroup/freezer/dsrun-hardening-*-$$; do  # a frozen rank left by a failed check
    [ -d "$f" ] || continue
    echo THAWED > "$f/freezer.state"; for id in $(cat "$f/cgroup.procs"); do kill -9 "$id" 2>/dev/null; done; rmdir "$f" 2>/dev/null
  done
  "$CLUSTER" slurm-down 3 >/dev/null 2>&1; "$CLUSTER" down 3 >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
# --- item 3 (local): a held MASTER_PORT is named with its holder before any rank starts --------------------------
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("0.0.0.0",0)); s.listen(1); print(s.getsockname()[1], flush=True); time.sleep(60)' >"$WORK/held" &
holder=$!
for _ in $(seq 100); do [ -s "$WORK/held" ] && break; sleep 0.05; done
held=$(cat "$WORK/held")
"$DSRUN" --master_port "$held" --no_python --no_local_rank /bin/sh -c 'touch '"$WORK"'/rank-ran' >"$WORK/port.out" 2>"$WORK/port.err"
rc=$?
if [ "$rc" != 0 ] && [ ! -e "$WORK/rank-ran" ] && grep -q "MASTER_PORT $held is already in use on this host by pid $holder (python3)" "$WORK/port.err"; then
  ok "local: a held MASTER_PORT fails before any rank starts, naming the port and pid $holder (python3)"
else not_ok "local: a held MASTER_PORT is named with its holder (rc $rc)"; show "$WORK/port.err"; fi
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
"$DSRUN" --master_port 0 --no_python --no_local_rank /bin/sh -c 'echo "port=$MASTER_PORT"' >"$WORK/port0.out" 2>"$WORK/port0.err"
picked=$(sed -n 's/.*--master_port 0: MASTER_PORT=\([0-9]*\).*/\1/p' "$WORK/port0.err")
if [ -n "$picked" ] && grep -qx "port=$picked" "$WORK/port0.out"; then ok "local: --master_port 0 picks a free port ($picked), prints it and gives it to the ranks"
else not_ok "local: --master_port 0 picks and prints a free port"; show "$WORK/port0.err"; show "$WORK/port0.out"; fi

# --- item 7 (local): a rank killed by the OOM killer is reported as out of memory --------------------------------
CG=/sys/fs/cgroup/memory/dsrun-oom-test-$$
if [ -d /sys/fs/cgroup/memory ] && mkdir "$CG" 2>/dev/null && echo 64M > "$CG/memory.limit_in_bytes"; then
  ( echo "$BASHPID" > "$CG/cgroup.procs" && exec timeout -s KILL 60 "$DSRUN" --master_port 0 --no_python --no_local_rank \
      /usr/bin/python3 -c 'x = bytearray(400 << 20)' ) >"$WORK/oom.out" 2>"$WORK/oom.err"
  rc=$?
  if [ "$rc" = 137 ] && grep -q "rank 0 (localhost pid [0-9]*) was killed by signal 9 (SIGKILL): out of memory (the kernel's OOM killer" "$WORK/oom.err"; then
    ok "local: a rank over its 64 MiB memory cgroup is reported as out of memory (exit 137)"
  else not_ok "local: an OOM-killed rank is reported as out of memory (rc $rc)"; show "$WORK/oom.err"; fi
  for _ in $(seq 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers && mkdir "/sys/fs/cgroup/dsrun-oom-test-$$" 2>/dev/null; then
  CG=/sys/fs/cgroup/dsrun-oom-test-$$; echo 64M > "$CG/memory.max"
  ( echo "$BASHPID" > "$CG/cgroup.procs" && exec timeout -s KILL 60 "$DSRUN" --master_port 0 --no_python --no_local_rank \
      /usr/bin/python3 -c 'x = bytearray(400 << 20)' ) >"$WORK/oom.out" 2>"$WORK/oom.err"
  rc=$?
  if [ "$rc" = 137 ] && grep -q "was killed by signal 9 (SIGKILL): out of memory (the kernel's OOM killer" "$WORK/oom.err"; then
    ok "local: a rank over its 64 MiB memory cgroup (v2) is reported as out of memory (exit 137)"
  else not_ok "local: an OOM-killed rank is reported as out of memory (rc $rc)"; show "$WORK/oom.err"; fi
  for _ in $(seq 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done
else
  echo "# SKIP local OOM: no writable memory cgroup (v1 /sys/fs/cgroup/memory or v2 with the memory controller)"
fi

if ! "$CLUSTER" up 3 >"$WORK/up.log" 2>&1 && ! { "$CLUSTER" down 3 >/dev/null 2>&1; "$CLUSTER" up 3 >"$WORK/up.log" 2>&1; }; then
  not_ok "test cluster comes up" "$(tail -3 "$WORK/up.log")"; exit 1
fi
"$DSRUN" --make_tls "$WORK/tls" >/dev/null
port=$((29700 + RANDOM % 250))
if "$CLUSTER" agents 3 "$AGENT" "$WORK/tls" "$port" >"$WORK/agents.log" 2>&1; then ok "test cluster comes up (3 hosts, sshd and agents)"
else not_ok "agents come up" "$(tail -3 "$WORK/agents.log")"; exit 1; fi
"$CLUSTER" hostfile 3 1 > "$WORK/hostfile"

job_id_of() {  # the DSRUN_JOB_ID the ranks of run DIR saw
  local f id
  for f in "$1"/env.*; do
    [ -f "$f" ] || continue
    id=$(tr '\0' '\n' < "$f" | grep -m1 '^DSRUN_JOB_ID=' | cut -d= -f2-)
    [ -n "$id" ] && { echo "$id"; return; }
  done
}
job_id_left() {  # pids on the machine (every host shares it) whose environment has DSRUN_JOB_ID=$1
  local pid left=""
  [ -n "$1" ] || return 1
  for pid in /proc/[0-9]*; do
    { tr '\0' '\n' < "$pid/environ"; } 2>/dev/null | grep -qxF "DSRUN_JOB_ID=$1" && left="$left ${pid#/proc/}"
  done
  [ -n "$left" ] && { echo "$left"; return 0; }
  return 1
}
# wait_gone ID SECONDS: 0 once nothing of job ID is left; prints how long it took.
wait_gone() {
  local start=$(date +%s.%N) i
  for i in $(seq $(($2 * 10))); do
    job_id_left "$1" >/dev/null || { echo "$(echo "$(date +%s.%N) - $start" | bc)"; return 0; }
    sleep 0.1
  done
  return 1
}
backend_flags() {
  case $1 in
    ssh) echo "--launcher ssh --ssh_config $ST/ssh_config" ;;
    agent) echo "--launcher agent --agent_port $port --tls_dir $WORK/tls" ;;
    *) echo "--launcher $1" ;;
  esac
}
# start_job BACKEND DIR MODE [dsrun flags...]: dsrun in the background ($pid), output in DIR.
start_job() {
  local b=$1 dir=$2 mode=$3 program=$RANK_SH; shift 3
  [ "$mode" = stuck ] && program=$HRANK_SH
  mkdir -p "$dir"; chmod 777 "$dir"
  # shellcheck disable=SC2046
  PDSH_SSH_ARGS_APPEND="-F $ST/ssh_config" "$DSRUN" -H "$WORK/hostfile" $(backend_flags "$b") \
    --master_addr 10.77.0.11 --kill_grace_s 3 --no_python --no_local_rank "$@" \
    "$program" "$dir" "$mode" >"$dir/stdout" 2>"$dir/stderr" &
  pid=$!
}
wait_ranks() {  # wait_ranks DIR N: until N ranks recorded their pid (60 s)
  local i; for i in $(seq 600); do [ "$(ls "$1" | grep -c '^pid\.')" -ge "$2" ] && return 0; sleep 0.1; done; return 1
}

# --- item 2 + 5: bytes over the agent, MASTER_ADDR from the agent with no ssh in PATH ------------------------
mkdir -p "$WORK/nossh"
for f in /usr/bin/* /usr/sbin/*; do
  case ${f##*/} in ssh|ssh-*|scp|sftp|slogin|pdsh|rsh) ;; *) ln -sf "$f" "$WORK/nossh/${f##*/}" ;; esac
done
BAD_ARG=$(printf 'caf\351 \377\376 end')
BAD_ENV=$(printf 'l\351tin-1 \377')
d=$WORK/agent-bytes; mkdir -p "$d"; chmod 777 "$d"
NCCL_LATIN1="$BAD_ENV" PATH="$WORK/nossh" timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile" $(backend_flags agent) \
  --kill_grace_s 3 --no_python --no_local_rank "$RANK_SH" "$d" record "$BAD_ARG" >"$d/stdout" 2>"$d/stderr"
rc=$?
if [ "$rc" = 0 ]; then ok "agent: a job with a non-UTF-8 argument and environment value exits 0 (no ssh in PATH)"
else not_ok "agent: a job with a non-UTF-8 argument and environment value exits 0 (got $rc)"; show "$d/stderr"; fi
bad=""
for r in 0 1 2; do
  printf '%s\0' "$BAD_ARG" | cmp -s - "$d/args.$r" || bad="$bad argv of rank $r differs;"
  tr '\0' '\n' < "$d/env.$r" 2>/dev/null | grep -qxF "NCCL_LATIN1=$BAD_ENV" || bad="$bad NCCL_LATIN1 of rank $r differs;"
  tr '\0' '\n' < "$d/env.$r" 2>/dev/null | grep -qxF "MASTER_ADDR=10.77.0.11" || bad="$bad MASTER_ADDR of rank $r is not 10.77.0.11;"
done
if [ -z "$bad" ]; then ok "agent: argv and env bytes arrive identical; MASTER_ADDR=10.77.0.11 from the first agent, no ssh"
else not_ok "agent: bytes and MASTER_ADDR" "$bad"; show "$d/stderr"; fi

# --- item 3 (agent): MASTER_PORT pre-flight by the first host's agent ---------------------------------------------
ip netns exec dsn1 python3 -c 'import socket,time; s=socket.socket(); s.bind(("0.0.0.0",0)); s.listen(1); print(s.getsockname()[1], flush=True); time.sleep(120)' >"$WORK/held-dsn1" &
holder=$!
for _ in $(seq 100); do [ -s "$WORK/held-dsn1" ] && break; sleep 0.05; done
held=$(cat "$WORK/held-dsn1")
d=$WORK/agent-port; mkdir -p "$d"; chmod 777 "$d"
timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile" $(backend_flags agent) --master_port "$held" --kill_grace_s 3 --no_python \
  --no_local_rank "$RANK_SH" "$d" record >"$d/stdout" 2>"$d/stderr"
rc=$?
if [ "$rc" != 0 ] && [ -z "$(ls "$d" | grep '^pid\.')" ] &&
   grep -q "agent dsn1:$port: MASTER_PORT $held is already in use on dsn1 by pid $holder (python3); nothing was started" "$d/stderr"; then
  ok "agent: MASTER_PORT held on dsn1 -> one error naming dsn1, port $held and pid $holder (python3); no rank started"
else not_ok "agent: a held MASTER_PORT on dsn1 is named before any rank starts (rc $rc)"; show "$d/stderr"; fi
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
d=$WORK/agent-port0; mkdir -p "$d"; chmod 777 "$d"
timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile" $(backend_flags agent) --master_port 0 --kill_grace_s 3 --no_python \
  --no_local_rank "$RANK_SH" "$d" record >"$d/stdout" 2>"$d/stderr"
rc=$?
picked=$(sed -n 's/.*--master_port 0: MASTER_PORT=\([0-9]*\) (free on dsn1, picked by its agent).*/\1/p' "$d/stderr")
bad=""
for r in 0 1 2; do
  tr '\0' '\n' < "$d/env.$r" 2>/dev/null | grep -qxF "MASTER_PORT=$picked" || bad="$bad rank $r;"
done
if [ "$rc" = 0 ] && [ -n "$picked" ] && [ -z "$bad" ]; then
  ok "agent: --master_port 0 -> dsn1's agent picks port $picked, printed and given to every rank"
else not_ok "agent: --master_port 0 picked by the first agent (rc $rc, port '$picked', wrong for:$bad)"; show "$d/stderr"; fi

# --- item 4 (agent, mesh probe, on by default): every agent reaches every other before anything starts ----------
d=$WORK/mesh-ok; mkdir -p "$d"; chmod 777 "$d"
DSRUN_LOG_LEVEL=debug timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile" $(backend_flags agent) --master_addr 10.77.0.11 \
  --kill_grace_s 3 --no_python --no_local_rank "$RANK_SH" "$d" record >"$d/stdout" 2>"$d/stderr"
rc=$?
if [ "$rc" = 0 ] && grep -q "mesh probe: 6 pairs of 3 agents connected in [0-9]* ms" "$d/stderr"; then
  ok "agent mesh probe (default): 6 pairs of 3 agents connect, the job runs ($(grep -o 'connected in [0-9]* ms' "$d/stderr"))"
else not_ok "agent mesh probe on a healthy cluster (rc $rc)"; show "$d/stderr"; fi
# dsn2 loses its route to dsn3 (both still reach the launcher): a partial partition
ip -n dsn2 route add unreachable 10.77.0.13/32
d=$WORK/mesh-broken; mkdir -p "$d"; chmod 777 "$d"
timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile" $(backend_flags agent) --master_addr 10.77.0.11 \
  --kill_grace_s 3 --no_python --no_local_rank "$RANK_SH" "$d" record >"$d/stdout" 2>"$d/stderr"
rc=$?
d2=$WORK/mesh-off; mkdir -p "$d2"; chmod 777 "$d2"
timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile" $(backend_flags agent) --no_mesh_probe --master_addr 10.77.0.11 \
  --kill_grace_s 3 --no_python --no_local_rank "$RANK_SH" "$d2" record >"$d2/stdout" 2>"$d2/stderr"
rc2=$?
ip -n dsn2 route del unreachable 10.77.0.13/32
if [ "$rc" = 2 ] && [ -z "$(ls "$d" | grep '^pid\.')" ] &&
   grep -q "mesh probe: dsn2 cannot reach dsn3:$port: No route to host (and [0-9]* more); nothing was started" "$d/stderr"; then
  ok "agent mesh probe: dsn2 without a route to dsn3 is named before any rank starts (exit 2)"
else not_ok "agent mesh probe names the broken pair dsn2 -> dsn3 (rc $rc)"; show "$d/stderr"; fi
if [ "$rc2" = 0 ] && [ "$(ls "$d2" | grep -c '^pid\.')" = 3 ]; then
  ok "--no_mesh_probe: the same partition is not checked and the 3 ranks (which do not talk) run"
else not_ok "--no_mesh_probe skips the probe (rc $rc2)"; show "$d2/stderr"; fi

# --- item D: kill -9 of dsrun leaves nothing anywhere ---------------------------------------------------------
for b in pdsh ssh agent; do
  d=$WORK/$b-kill9; start_job "$b" "$d" wait
  if ! wait_ranks "$d" 3; then not_ok "$b: 3 ranks start"; show "$d/stderr"; kill -9 "$pid"; wait "$pid" 2>/dev/null; continue; fi
  kill -9 "$pid"; wait "$pid" 2>/dev/null
  id=$(job_id_of "$d")
  if [ -n "$id" ] && took=$(wait_gone "$id" 30); then ok "$b: kill -9 of dsrun leaves nothing of the job on any host (gone after ${took}s)"
  else not_ok "$b: kill -9 of dsrun leaves nothing of the job ($id) within 30 s" "left: $(job_id_left "$id")"; show "$d/stderr"; fi
done

# --- torchrun's variables on every rank (the kill -9 runs above recorded their environments) ------
for b in pdsh ssh agent; do
  d=$WORK/$b-kill9; id=$(job_id_of "$d"); bad=""
  for r in 0 1 2; do
    for kv in GROUP_RANK=$r GROUP_WORLD_SIZE=3 LOCAL_WORLD_SIZE=1 ROLE_RANK=$r ROLE_WORLD_SIZE=3 ROLE_NAME=default \
              TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 "TORCHELASTIC_RUN_ID=$id"; do
      tr '\0' '\n' < "$d/env.$r" 2>/dev/null | grep -qxF "$kv" || bad="$bad rank $r lacks $kv;"
    done
  done
  if [ -n "$id" ] && [ -z "$bad" ]; then ok "$b: every rank has torchrun's variables (GROUP_RANK = node, ROLE_RANK = rank, run id = job id)"
  else not_ok "$b: torchrun's variables on every rank" "$bad"; fi
done

# --- --max_restarts on a job that is not elastic, under pdsh, ssh and agent ---------------------
for b in pdsh ssh agent; do
  d=$WORK/$b-restart; mkdir -p "$d"; chmod 777 "$d"
  # shellcheck disable=SC2046
  PDSH_SSH_ARGS_APPEND="-F $ST/ssh_config" timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile" $(backend_flags "$b") \
    --master_addr 10.77.0.11 --kill_grace_s 3 --max_restarts 1 --no_python --no_local_rank "$HRANK_SH" "$d" restart 1 \
    >"$d/stdout" 2>"$d/stderr"
  rc=$?
  counts=$(awk '{print $2}' "$d/attempts" 2>/dev/null | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
  ids=$(awk '{print $3}' "$d/attempts" 2>/dev/null | sort -u | wc -l)
  if [ "$rc" = 0 ] && [ "$counts" = "0:3 1:3 " ] && [ "$ids" = 2 ] &&
     grep -q "restarting the whole world (restart 1 of 1, TORCHELASTIC_RESTART_COUNT=1): the job failed with exit code 5" "$d/stderr" &&
     grep -q "restart summary: 1 restart(s) of 1 (1: exit code 5)" "$d/stderr"; then
    ok "$b --max_restarts 1: rank 0 on dsn1 failed, the 3 hosts' world ran again (restart count 1, new job id) and exited 0"
  else not_ok "$b --max_restarts 1 restarts the whole world (rc $rc, attempts: $counts, job ids: $ids)"; show "$d/stderr"; fi
done

# --- hang detection by dsrun-launch on each node (pdsh, ssh) -------------------------------------
for b in pdsh ssh; do
  d=$WORK/$b-hang; mkdir -p "$d"; chmod 777 "$d"
  # shellcheck disable=SC2046
  PDSH_SSH_ARGS_APPEND="-F $ST/ssh_config" timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile" $(backend_flags "$b") \
    --master_addr 10.77.0.11 --kill_grace_s 2 --hang_timeout_s 2 --enable_each_rank_log "$d/logs" --no_python \
    --no_local_rank "$HRANK_SH" "$d" progress >"$d/stdout" 2>"$d/stderr"
  rc=$?
  if [ "$rc" != 0 ] && grep -rq "no progress for 2 s (--hang_timeout_s) by rank 0 (step 3) on dsn1; stacks of every rank: $d/logs/dsrun-hang-" "$d/stderr" "$d/logs" &&
     [ -s "$(ls -d "$d"/logs/dsrun-hang-*/rank0.txt 2>/dev/null | head -1)" ]; then
    ok "$b --hang_timeout_s 2: dsn1's dsrun-launch names rank 0 stuck at step 3, writes its stacks, the job fails (exit $rc)"
  else not_ok "$b --hang_timeout_s: the stuck rank is named and its stacks written (rc $rc)"; show "$d/stderr"; fi
done

# --- --exit_timeout_s is job-wide under pdsh and ssh (and agent), and fails the job ----
for b in pdsh ssh agent; do
  d=$WORK/$b-exit-timeout; start_job "$b" "$d" first_exits --exit_timeout_s 2
  for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; wait "$pid" 2>/dev/null; not_ok "$b: --exit_timeout_s 2 ends the job within 60 s"; show "$d/stderr"
  else
    wait "$pid"; rc=$?
    if [ "$rc" != 0 ] && grep -q "dsrun: exit timeout: rank 1 [^,]*dsn2[^,]*, rank 2 [^,]*dsn3[^,]* still running 2s after rank 0 [^;]*dsn1[^;]* finished cleanly; stopped them, the job fails" "$d/stderr"; then
      ok "$b: --exit_timeout_s 2 after rank 0 finished on dsn1 stops ranks 1 and 2 on dsn2 and dsn3, names them and fails (exit $rc)"
    else not_ok "$b: --exit_timeout_s job-wide, failing and naming the ranks (rc $rc)"; show "$d/stderr"; fi
  fi
  id=$(job_id_of "$d")
  if [ -n "$id" ] && wait_gone "$id" 30 >/dev/null; then ok "$b: nothing of the exit-timed-out job is left on any host"
  else not_ok "$b: nothing of the exit-timed-out job ($id) is left" "left: $(job_id_left "$id")"; fi
done

# --- a rank stuck in state D (frozen by the cgroup v1 freezer) under agent and pdsh ---------------
if [ ! -w /sys/fs/cgroup/freezer ]; then
  not_ok "agent/pdsh: a rank in state D is given up (needs the cgroup v1 freezer to freeze a rank; /sys/fs/cgroup/freezer not writable)"
else
  for b in agent pdsh; do
    FREEZER=/sys/fs/cgroup/freezer/dsrun-hardening-$b-$$; mkdir -p "$FREEZER"
    d=$WORK/$b-stuck; start_job "$b" "$d" stuck
    if ! for _ in $(seq 600); do [ -s "$d/pid.0" ] && [ -s "$d/pid.1" ] && [ -s "$d/pid.2" ] && break; sleep 0.1; done ||
       [ ! -s "$d/pid.2" ]; then
      not_ok "$b: 3 ranks start for the state D check"; show "$d/stderr"; kill -9 "$pid"; wait "$pid" 2>/dev/null
    else
      stuck=$(cat "$d/pid.1")
      echo "$stuck" > "$FREEZER/cgroup.procs" && echo FROZEN > "$FREEZER/freezer.state"
      for _ in $(seq 100); do grep -qx FROZEN "$FREEZER/freezer.state" && break; sleep 0.1; done
      touch "$d/go"
      # 3 s grace + 10 s kill wait, with slack: the guard is against a hang (the bug), not a timing check.
      for _ in $(seq 900); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; wait "$pid" 2>/dev/null; not_ok "$b: dsrun ends while rank 1 is in state D"; show "$d/stderr"
      else
        wait "$pid"; rc=$?
        if [ "$rc" = 3 ] && grep -q "rank 1 (dsn2 pid $stuck) is still alive 10s after SIGKILL, in state D (disk sleep)" "$d/stderr"; then
          ok "$b: rank 1 frozen in state D on dsn2 is named with its state 10 s after SIGKILL; dsrun exits with rank 0's code 3"
        else not_ok "$b: a rank in state D is named and dsrun exits 3 (rc $rc)"; show "$d/stderr"; fi
      fi
    fi
    echo THAWED > "$FREEZER/freezer.state"
    for p in $(cat "$FREEZER/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    for _ in $(seq 50); do rmdir "$FREEZER" 2>/dev/null && break; sleep 0.1; done
  done
fi

# --- item 6: Slurm runs exactly on the hostfile's hosts -----------------------------------------------------------
if ! "$CLUSTER" slurm-up 3 >"$WORK/slurm.log" 2>&1; then not_ok "slurm comes up on the test cluster" "$(tail -5 "$WORK/slurm.log")"
else
  export SLURM_CONF=$ST/slurm/slurm.conf
  printf 'dsn2 slots=2\n' > "$WORK/hostfile-dsn2"
  d=$WORK/slurm-subset; mkdir -p "$d"; chmod 777 "$d"
  timeout -s KILL 120 "$DSRUN" -H "$WORK/hostfile-dsn2" --launcher slurm --force_multi --master_addr 10.77.0.12 \
    --no_python --no_local_rank "$RANK_SH" "$d" record >"$d/stdout" 2>"$d/stderr"
  rc=$?
  hosts=$(cat "$d"/host.* 2>/dev/null | sort | tr '\n' ' ')
  if [ "$rc" = 0 ] && [ "$hosts" = "dsn2 dsn2 " ]; then ok "slurm: a hostfile naming only dsn2 runs both ranks on dsn2"
  else not_ok "slurm: a hostfile naming only dsn2 runs both ranks there (rc $rc, hosts: $hosts)"; show "$d/stderr"; fi
  bad=""
  for r in 0 1; do
    for kv in GROUP_RANK=0 GROUP_WORLD_SIZE=1 LOCAL_WORLD_SIZE=2 ROLE_RANK=$r ROLE_WORLD_SIZE=2 ROLE_NAME=default \
              TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0; do
      tr '\0' '\n' < "$d/env.$r" 2>/dev/null | grep -qxF "$kv" || bad="$bad rank $r lacks $kv;"
    done
  done
  if [ -z "$bad" ]; then ok "slurm (rank mode): both ranks have torchrun's variables"
  else not_ok "slurm: torchrun's variables on every rank" "$bad"; fi
  printf 'dsn1 slots=1\ndsn9 slots=1\n' > "$WORK/hostfile-dsn9"
  timeout -s KILL 60 "$DSRUN" -H "$WORK/hostfile-dsn9" --launcher slurm --master_addr 10.77.0.11 --no_python \
    /bin/true >"$WORK/dsn9.out" 2>"$WORK/dsn9.err"
  rc=$?
  if [ "$rc" != 0 ] && grep -q "host 'dsn9' in $WORK/hostfile-dsn9 is not a Slurm node (nodes: dsn1, dsn2, dsn3)" "$WORK/dsn9.err"; then
    ok "slurm: a hostfile host unknown to Slurm is an error naming it and the nodes"
  else not_ok "slurm: unknown host named (rc $rc)"; show "$WORK/dsn9.err"; fi
  "$CLUSTER" slurm-down 3 >/dev/null 2>&1; unset SLURM_CONF
fi
echo "1..$n"
[ "$failed" = 0 ]
