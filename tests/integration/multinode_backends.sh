#!/bin/bash
# Integration tests of the multi-node backends (docs/backends.md) on the test cluster of
# scripts/test_cluster.sh: 4 network-namespace hosts dsn1..dsn4 with sshd, 2 slots each. Sharness style.
#   multinode_backends.sh DSRUN BACKEND...      (BACKEND: pdsh ssh openmpi mpich slurm mvapich impi)
# Needs root (CI runs as root): without it every check FAILS, saying why. The cluster is always torn down.
set -u
DSRUN=${1:?usage: multinode_backends.sh DSRUN BACKEND...}; shift
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER=$ROOT/scripts/test_cluster.sh
RANK_SH=$HERE/multinode_rank.sh
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
ST=$DSRUN_CLUSTER_STATE
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
show() { echo "#   --- $1:"; sed 's/^/#   | /' "$1" 2>/dev/null | tail -25; }

if [ "$(id -u)" -ne 0 ]; then
  not_ok "multi-node backends need root for the network-namespace test cluster (CI runs as root); running as uid $(id -u)"
  exit 1
fi
WORK=$(mktemp -d /tmp/dsrun-multinode.XXXXXX); chmod 755 "$WORK"
cleanup() {
  local f id
  for f in "$WORK"/*/env.0; do  # the jobs' kill marks in /tmp (docs/backends.md)
    id=$( { tr '\0' '\n' < "$f" | grep -m1 '^DSRUN_JOB_ID=' | cut -d= -f2-; } 2>/dev/null)
    [ -n "$id" ] && rm -rf "/tmp/dsrun-$id"
  done
  "$CLUSTER" slurm-down 4 >/dev/null 2>&1; "$CLUSTER" down 4 >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
# One retry from scratch: on a loaded machine an sshd has been seen to die during bring-up.
if ! "$CLUSTER" up 4 >"$WORK/up.log" 2>&1 && ! { "$CLUSTER" down 4 >/dev/null 2>&1; "$CLUSTER" up 4 >"$WORK/up.log" 2>&1; }; then not_ok "test cluster comes up" "$(tail -3 "$WORK/up.log")"; exit 1; fi
ok "test cluster comes up (4 hosts)"
"$CLUSTER" hostfile 4 2 > "$WORK/hostfile"
printf '#!/bin/sh\nexec /usr/bin/ssh -F %s/ssh_config "$@"\n' "$ST" > "$WORK/ssh-wrap"; chmod +x "$WORK/ssh-wrap"

# Without --master_addr, a launch asks the first host over ssh (`hostname -I`), with the backend's own ssh
# settings: here PDSH_SSH_ARGS_APPEND, without which the host key check fails. (--dry_run contacts no host.)
# The same launch sources DeepSpeed's --venv_script on every node before its ranks start.
printf 'VENV_MARK="sourced on $(hostname)"; export VENV_MARK\n' > "$WORK/venv.sh"
mout=$(PDSH_SSH_ARGS_APPEND="-F $ST/ssh_config" timeout -s KILL 60 "$DSRUN" -H "$WORK/hostfile" --launcher pdsh \
  --venv_script "$WORK/venv.sh" --no_python --no_local_rank /bin/sh -c 'echo "master=$MASTER_ADDR $VENV_MARK"' \
  2>"$WORK/master.err")
if [ "$(printf '%s\n' "$mout" | grep -c 'master=10.77.0.11 ')" = 8 ]; then
  ok "pdsh: MASTER_ADDR inferred over ssh with PDSH_SSH_ARGS_APPEND"
else not_ok "pdsh: MASTER_ADDR inferred over ssh with PDSH_SSH_ARGS_APPEND" "$mout" "$(cat "$WORK/master.err")"; fi
if [ "$(printf '%s\n' "$mout" | grep -cE '^dsn([1-4]): master=10.77.0.11 sourced on dsn\1$')" = 8 ]; then
  ok "pdsh: --venv_script is sourced on each node before its ranks start"
else not_ok "pdsh: --venv_script is sourced on each node before its ranks start" "$mout"; fi

NASTY_ARG=$(printf 'sp ace "dq" '"'"'sq'"'"' $HOME %%n %%h `x` \\ ;|& \nnl \303\274nic\303\270de')
NASTY_ENV=$(printf 'v "q" '"'"'s'"'"' $PATH %%h\nline2 \303\274')
export NCCL_NASTY="$NASTY_ENV"

# Per-backend flags that point it at the cluster's ssh settings.
backend_flags() {
  case $1 in
    pdsh) echo "--launcher pdsh" ;;
    ssh) echo "--launcher ssh --ssh_config $ST/ssh_config" ;;
    openmpi) echo "--launcher openmpi" ;;
    mpich) echo "--launcher mpich" ;;
    slurm) echo "--launcher slurm" ;;
    *) echo "--launcher $1" ;;
  esac
}
launcher_args() {
  case $1 in
    openmpi) echo "--allow-run-as-root --oversubscribe --mca plm_rsh_args '-F $ST/ssh_config'" ;;
    mpich) echo "-launcher ssh -launcher-exec $WORK/ssh-wrap -iface dsbr0" ;;
    *) echo "" ;;
  esac
}
# run_dsrun BACKEND DIR MODE: runs the job (killed after 180 s), sets rc.
run_dsrun() {
  local b=$1 dir=$2 mode=$3
  mkdir -p "$dir"; chmod 777 "$dir"
  # shellcheck disable=SC2046
  PDSH_SSH_ARGS_APPEND="-F $ST/ssh_config" timeout -s KILL 180 "$DSRUN" -H "$WORK/hostfile" $(backend_flags "$b") \
    --launcher_args "$(launcher_args "$b")" --master_addr 10.77.0.11 --kill_grace_s 5 --no_python --no_local_rank \
    "$RANK_SH" "$dir" "$mode" "$NASTY_ARG" "" "plain" >"$dir/stdout" 2>"$dir/stderr"
  rc=$?
}
job_id_of() {  # the DSRUN_JOB_ID the ranks of run DIR saw
  local f id
  # A rank interrupted while writing its env file leaves it partial: take the first file that has the id.
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
wait_gone() { local i; for i in $(seq 100); do job_id_left "$1" >/dev/null || return 0; sleep 0.1; done; return 1; }

check_world() {
  local b=$1 dir=$2 bad=""
  local r
  for r in 0 1 2 3 4 5 6 7; do
    [ -f "$dir/env.$r" ] || { bad="$bad rank $r never ran;"; continue; }
    local want_host="dsn$((r / 2 + 1))"
    [ "$(cat "$dir/host.$r")" = "$want_host" ] || bad="$bad rank $r on $(cat "$dir/host.$r") not $want_host;"
    get() { tr '\0' '\n' < "$dir/env.$r" | grep -m1 "^$1=" | cut -d= -f2-; }
    [ "$(get RANK)" = "$r" ] || bad="$bad RANK=$(get RANK) for $r;"
    [ "$(get LOCAL_RANK)" = "$((r % 2))" ] || bad="$bad LOCAL_RANK=$(get LOCAL_RANK) for $r;"
    [ "$(get WORLD_SIZE)" = 8 ] || bad="$bad WORLD_SIZE=$(get WORLD_SIZE);"
    [ "$(get MASTER_ADDR)" = 10.77.0.11 ] || bad="$bad MASTER_ADDR=$(get MASTER_ADDR);"
    [ "$(get CROSS_RANK)" = "$((r / 2))" ] || bad="$bad CROSS_RANK=$(get CROSS_RANK) for $r;"
    [ -n "$(get DSRUN_JOB_ID)" ] || bad="$bad no DSRUN_JOB_ID;"
    printf '%s\0%s\0%s\0' "$NASTY_ARG" "" "plain" | cmp -s - "$dir/args.$r" || bad="$bad argv of rank $r differs;"
    printf 'NCCL_NASTY=%s\0' "$NASTY_ENV" > "$dir/want_env"
    python3 - "$dir/env.$r" "$dir/want_env" <<'PY' || bad="$bad NCCL_NASTY of rank $r differs;"
import sys
env = open(sys.argv[1], 'rb').read().split(b'\0')
want = open(sys.argv[2], 'rb').read().rstrip(b'\0')
sys.exit(0 if want in env else 1)
PY
  done
  if [ -z "$bad" ]; then ok "$b: 4 hosts x 2 ranks with RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR, placement, argv and env byte for byte"
  else not_ok "$b: 4 hosts x 2 ranks" "$bad"; show "$dir/stderr"; fi
}

for b in "$@"; do
  case $b in
    slurm)
      if ! "$CLUSTER" slurm-up 4 >"$WORK/slurm.log" 2>&1; then
        not_ok "slurm: Slurm comes up on the test cluster" "$(tail -5 "$WORK/slurm.log")"; continue
      fi
      export SLURM_CONF=$ST/slurm/slurm.conf ;;
    mvapich) command -v mpiname >/dev/null || { echo "# SKIP mvapich: mpiname not installed; its dry-run argv tests cover it"; continue; } ;;
    impi) command -v mpiexec.hydra >/dev/null && [ -n "${I_MPI_ROOT:-}" ] || { echo "# SKIP impi: Intel MPI not installed; its dry-run argv tests cover it"; continue; } ;;
  esac
  d=$WORK/$b-ok; run_dsrun "$b" "$d" record
  if [ "$rc" = 0 ]; then ok "$b: job exits 0"; else not_ok "$b: job exits 0 (got $rc)"; show "$d/stderr"; fi
  check_world "$b" "$d"

  d=$WORK/$b-fail; NCCL_FAIL_RANK=5 NCCL_FAIL_CODE=3 run_dsrun "$b" "$d" fail
  if [ "$rc" = 3 ] && grep -q "rank 5 on dsn3 (pid [0-9]*) exited with code 3" "$d/stderr"; then
    ok "$b: rank 5 on dsn3 exiting 3 ends dsrun with 3, naming host, rank, pid and cause"
  else not_ok "$b: rank 5 on dsn3 exiting 3 -> exit 3 naming it (got $rc)"; show "$d/stderr"; fi
  # The closing root-cause block: rank, host, code, and (where dsrun-launch supervises the ranks) its stderr.
  want_tail='^dsrun:     rank 5 gives up with 3$'
  case $b in pdsh|ssh) ;; *) want_tail='^dsrun:   stderr   : not captured by this backend' ;; esac
  if tail -n 9 "$d/stderr" | grep -q '^dsrun:   rank     : 5$' && tail -n 9 "$d/stderr" | grep -q '^dsrun:   host     : dsn3$' &&
    tail -n 9 "$d/stderr" | grep -q '^dsrun:   exitcode : 3 (pid: [0-9]*)$' && tail -n 3 "$d/stderr" | grep -q "$want_tail"; then
    ok "$b: the last lines are the root-cause block of rank 5"
  else not_ok "$b: the last lines are the root-cause block of rank 5"; show "$d/stderr"; fi
  id=$(job_id_of "$d")
  if [ -n "$id" ] && wait_gone "$id"; then ok "$b: nothing of the failed job is left on any host"
  else not_ok "$b: nothing of the failed job ($id) is left" "left: $(job_id_left "$id")"; fi

  d=$WORK/$b-int; mkdir -p "$d"; chmod 777 "$d"
  PDSH_SSH_ARGS_APPEND="-F $ST/ssh_config" env --default-signal=INT "$DSRUN" -H "$WORK/hostfile" $(backend_flags "$b") \
    --launcher_args "$(launcher_args "$b")" --master_addr 10.77.0.11 --kill_grace_s 5 --no_python --no_local_rank \
    "$RANK_SH" "$d" wait >"$d/stdout" 2>"$d/stderr" &
  pid=$!
  for _ in $(seq 300); do [ "$(ls "$d" | grep -c '^pid\.')" -ge 3 ] && break; sleep 0.05; done
  kill -INT "$pid"
  for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; not_ok "$b: SIGINT during launch ends dsrun within 60 s"
  else
    wait "$pid"; irc=$?
    if [ "$irc" = 130 ]; then ok "$b: SIGINT during launch ends dsrun with 130"
    else not_ok "$b: SIGINT during launch ends dsrun with 130 (got $irc)"; show "$d/stderr"; fi
  fi
  id=$(job_id_of "$d")
  if [ -n "$id" ] && wait_gone "$id"; then ok "$b: after SIGINT nothing of the job is left on any host"
  else not_ok "$b: after SIGINT nothing of the job ($id) is left" "left: $(job_id_left "$id")"; show "$d/stderr"; fi
  [ "$b" = slurm ] && { "$CLUSTER" slurm-down 4 >/dev/null 2>&1; unset SLURM_CONF; }
done
echo "1..$n"
[ "$failed" = 0 ]
