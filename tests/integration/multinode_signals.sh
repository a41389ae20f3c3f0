#!/bin/bash
# Signals and sibling termination under the pdsh and ssh backends (docs/backends.md),
# and USR1/USR2 through mpirun (openmpi) and srun (slurm, also Ctrl-C: scancel passes each signal on),
# on the test cluster of scripts/test_cluster.sh: 3 network-namespace hosts dsn1..dsn3 with sshd, one rank
# each. Sharness style.
#   multinode_signals.sh DSRUN
# - Slurm's test_116_25 pattern: USR1 x2, USR2 x3, TERM x1 sent to dsrun arrive as such at every rank on
#   every host, dsrun survives USR1/USR2 and exits 143 (the ranks exit 0 after TERM);
# - one SIGINT to dsrun: exactly one SIGINT per rank, no SIGTERM, exit 130;
# - a rank failing on dsn3: the ranks on dsn1 and dsn2 get SIGTERM (not SIGKILL) from their launchers
#   within the kill grace; how long that took is printed (ssh logins here run root's .bashrc).
# Needs root (CI runs as root): without it every check FAILS, saying why. The cluster is always torn down.
set -u
DSRUN=$(readlink -f "${1:?usage: multinode_signals.sh DSRUN}")
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER=$ROOT/scripts/test_cluster.sh
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
ST=$DSRUN_CLUSTER_STATE
BACKENDS=${MNS_BACKENDS:-pdsh ssh}
# mpirun and srun pass USR1/USR2 to their tasks (dsrun-launch in rank mode, which passes them on); only
# the counting test runs there (their own Ctrl-C and failure rules are mpirun's and srun's).
FORWARDERS=${MNS_FORWARDERS:-openmpi slurm}
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
show() { echo "#   --- $1:"; sed 's/^/#   | /' "$1" 2>/dev/null | tail -25; }

if [ "$(id -u)" -ne 0 ]; then
  not_ok "multi-node signals need root for the network-namespace test cluster (CI runs as root); running as uid $(id -u)"
  exit 1
fi
WORK=$(mktemp -d /tmp/dsrun-signals.XXXXXX); chmod 755 "$WORK"
cleanup() {
  local f
  for f in "$WORK"/*/jobid.*; do [ -s "$f" ] && rm -rf "/tmp/dsrun-$(cat "$f")"; done  # kill marks (docs/backends.md)
  "$CLUSTER" slurm-down 3 >/dev/null 2>&1; "$CLUSTER" down 3 >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
if ! "$CLUSTER" up 3 >"$WORK/up.log" 2>&1 && ! { "$CLUSTER" down 3 >/dev/null 2>&1; "$CLUSTER" up 3 >"$WORK/up.log" 2>&1; }; then
  not_ok "test cluster comes up" "$(tail -3 "$WORK/up.log")"; exit 1
fi
ok "test cluster comes up (3 hosts with sshd)"
"$CLUSTER" hostfile 3 1 > "$WORK/hostfile"

# The rank: counts each signal, writes DIR/ready.RANK once its handlers are set; after the first stop
# signal it waits 0.5 s (anything sent later is counted too), writes DIR/sig.RANK and exits 0. In mode
# fail, rank 2 exits 3 once every rank is ready, writing the time to DIR/failed; every stopped rank writes
# the time its first stop signal arrived to DIR/stopped.RANK.
cat >"$WORK/sig.py" <<'EOS'
import os, signal, sys, time
d, mode, rank = sys.argv[1], sys.argv[2], os.environ["RANK"]
names = {signal.SIGUSR1: "USR1", signal.SIGUSR2: "USR2", signal.SIGTERM: "TERM", signal.SIGINT: "INT",
         signal.SIGHUP: "HUP"}
counts = {n: 0 for n in names.values()}
stopped = []
def on(s, _):
    counts[names[s]] += 1
    if names[s] in ("TERM", "INT", "HUP") and not stopped: stopped.append(time.time())
for s in names: signal.signal(s, on)
with open(f"{d}/jobid.{rank}", "w") as f: f.write(os.environ.get("DSRUN_JOB_ID", ""))
open(f"{d}/ready.{rank}", "w").close()
if mode == "fail" and rank == "2":
    while len([n for n in os.listdir(d) if n.startswith("ready.")]) < int(os.environ["WORLD_SIZE"]): time.sleep(0.01)
    with open(f"{d}/failed", "w") as f: f.write(repr(time.time()))
    sys.exit(3)
deadline = time.time() + 300
while not stopped and time.time() < deadline: time.sleep(0.01)
time.sleep(0.5)
with open(f"{d}/stopped.{rank}", "w") as f: f.write(repr(stopped[0]) if stopped else "none")
with open(f"{d}/sig.{rank}", "w") as f: f.write(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
EOS
backend_flags() {
  case $1 in
    ssh) echo "--launcher ssh --ssh_config $ST/ssh_config" ;;
    *) echo "--launcher $1" ;;
  esac
}
launcher_args() {
  case $1 in
    openmpi) echo "--allow-run-as-root --oversubscribe --mca plm_rsh_args '-F $ST/ssh_config'" ;;
    *) echo "" ;;
  esac
}
# start_job BACKEND DIR MODE: dsrun in the background with SIGINT at its default ($pid is dsrun itself).
start_job() {
  mkdir -p "$2"; chmod 777 "$2"
  # shellcheck disable=SC2046
  PDSH_SSH_ARGS_APPEND="-F $ST/ssh_config" env --default-signal=INT "$DSRUN" -H "$WORK/hostfile" $(backend_flags "$1") \
    --launcher_args "$(launcher_args "$1")" --master_addr 10.77.0.11 --kill_grace_s 10 --no_python --no_local_rank /usr/bin/python3 "$WORK/sig.py" "$2" "$3" \
    >"$2/stdout" 2>"$2/stderr" &
  pid=$!
}
wait_ready() {  # wait_ready DIR N (120 s: each ssh login here runs root's .bashrc)
  local i; for i in $(seq 1200); do [ "$(ls "$1" | grep -c '^ready\.')" -ge "$2" ] && return 0; sleep 0.1; done; return 1
}
wait_dsrun() {  # wait_dsrun: dsrun's exit code into rc, killing it after 120 s
  local i; for i in $(seq 1200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && { kill -9 "$pid"; echo "# dsrun still running after 120 s: killed"; }
  wait "$pid"; rc=$?
}
all_counts() {  # all_counts DIR EXPECTED: every rank (0..2) reports EXPECTED
  local r bad=""
  for r in 0 1 2; do [ "$(cat "$1/sig.$r" 2>/dev/null)" = "$2" ] || bad="$bad rank $r: '$(cat "$1/sig.$r" 2>/dev/null)';"; done
  [ -z "$bad" ] || { echo "#  $bad"; return 1; }
}

for b in $BACKENDS; do
  # --- Slurm's test_116_25: USR1 x2, USR2 x3, TERM x1 -----------------------------------------------------
  d=$WORK/$b-counts; start_job "$b" "$d" wait
  if ! wait_ready "$d" 3; then not_ok "$b: 3 ranks start"; show "$d/stderr"; kill -9 "$pid"; wait "$pid" 2>/dev/null; continue; fi
  for s in USR1 USR2 USR1 USR2 USR2 TERM; do kill -s "$s" "$pid"; sleep 0.3; done
  wait_dsrun
  if all_counts "$d" "HUP=0 INT=0 TERM=1 USR1=2 USR2=3"; then ok "$b: USR1 x2, USR2 x3, TERM x1 arrive as such at every rank on every host"
  else not_ok "$b: USR1 x2, USR2 x3, TERM x1 arrive as such at every rank"; show "$d/stderr"; fi
  if [ "$rc" = 143 ]; then ok "$b: dsrun survives SIGUSR1/SIGUSR2 and exits 143 after SIGTERM (the ranks exited 0)"
  else not_ok "$b: dsrun exits 143 after USR1/USR2/TERM (got $rc)"; show "$d/stderr"; fi

  # --- one Ctrl-C -----------------------------------------------------------------------------------------
  d=$WORK/$b-int; start_job "$b" "$d" wait
  if ! wait_ready "$d" 3; then not_ok "$b: 3 ranks start"; show "$d/stderr"; kill -9 "$pid"; wait "$pid" 2>/dev/null; continue; fi
  kill -INT "$pid"
  wait_dsrun
  if all_counts "$d" "HUP=0 INT=1 TERM=0 USR1=0 USR2=0"; then ok "$b: one Ctrl-C = exactly one SIGINT per rank on every host, no SIGTERM"
  else not_ok "$b: one Ctrl-C = one SIGINT per rank"; show "$d/stderr"; fi
  if [ "$rc" = 130 ]; then ok "$b: exit 130 after Ctrl-C although the ranks exited 0"
  else not_ok "$b: exit 130 after Ctrl-C (got $rc)"; show "$d/stderr"; fi

  # --- a rank fails on dsn3: its siblings elsewhere are stopped with SIGTERM --------------------------------
  d=$WORK/$b-fail; start_job "$b" "$d" fail
  wait_dsrun
  if [ "$rc" = 3 ] && grep -q "rank 2 on dsn3 (pid [0-9]*) exited with code 3" "$d/stderr" &&
     all_counts_01=$(for r in 0 1; do cat "$d/sig.$r" 2>/dev/null; echo; done) &&
     [ "$(printf '%s' "$all_counts_01" | grep -c 'TERM=1')" = 2 ]; then
    took=$(python3 -c 'import sys; d=sys.argv[1]; f=float(open(d+"/failed").read()); print("%.2f" % max(float(open(f"{d}/stopped.{r}").read()) - f for r in (0, 1)))' "$d" 2>/dev/null)
    ok "$b: rank 2 failing on dsn3 -> the ranks on dsn1 and dsn2 got SIGTERM ${took}s later (kill grace 10 s), exit 3"
  else not_ok "$b: a failure on dsn3 stops dsn1 and dsn2 with SIGTERM (rc $rc)"; show "$d/stderr"; fi
done
for b in $FORWARDERS; do
  if [ "$b" = slurm ]; then
    if ! "$CLUSTER" slurm-up 3 >"$WORK/slurm.log" 2>&1; then
      not_ok "slurm: Slurm comes up on the test cluster" "$(tail -5 "$WORK/slurm.log")"; continue
    fi
    export SLURM_CONF=$ST/slurm/slurm.conf
  fi
  d=$WORK/$b-counts; start_job "$b" "$d" wait
  if ! wait_ready "$d" 3; then
    not_ok "$b: 3 ranks start"; show "$d/stderr"; kill -9 "$pid"; wait "$pid" 2>/dev/null
  else
    for s in USR1 USR2 USR1 USR2 USR2; do kill -s "$s" "$pid"; sleep 0.3; done
    sleep 1
    kill -TERM "$pid"
    wait_dsrun
    usr=""
    for r in 0 1 2; do usr="$usr $(tr ' ' '\n' <"$d/sig.$r" 2>/dev/null | grep USR | tr '\n' ' ')"; done
    if [ "$(echo $usr)" = "$(echo USR1=2 USR2=3 USR1=2 USR2=3 USR1=2 USR2=3)" ]; then
      ok "$b: USR1 x2, USR2 x3 sent to dsrun arrive as such at every rank on every host"
    else not_ok "$b: USR1 x2, USR2 x3 arrive as such at every rank (got:$usr)"; show "$d/stderr"; fi
    stopped=0; for r in 0 1 2; do grep -qv none "$d/stopped.$r" 2>/dev/null && stopped=$((stopped + 1)); done
    if [ "$rc" = 143 ] && [ "$stopped" = 3 ] && all_counts "$d" "HUP=0 INT=0 TERM=1 USR1=2 USR2=3"; then
      ok "$b: dsrun survives SIGUSR1/SIGUSR2; one SIGTERM reaches every rank once (no SIGKILL) and dsrun exits 143"
    else not_ok "$b: SIGTERM after USR1/USR2 stops every rank, exit 143 (got $rc; $(cat "$d"/sig.* 2>/dev/null | tr '\n' ';'))"; show "$d/stderr"; fi
  fi
  if [ "$b" = slurm ]; then
    # srun itself answers one SIGINT with a status line, not a stop: dsrun passes Ctrl-C on through scancel.
    d=$WORK/$b-int; start_job "$b" "$d" wait
    if ! wait_ready "$d" 3; then not_ok "$b: 3 ranks start"; show "$d/stderr"; kill -9 "$pid"; wait "$pid" 2>/dev/null
    else
      kill -INT "$pid"
      wait_dsrun
      if all_counts "$d" "HUP=0 INT=1 TERM=0 USR1=0 USR2=0" && [ "$rc" = 130 ]; then
        ok "$b: one Ctrl-C = exactly one SIGINT per rank on every host, exit 130"
      else not_ok "$b: one Ctrl-C = one SIGINT per rank, exit 130 (got $rc)"; show "$d/stderr"; fi
    fi
    "$CLUSTER" slurm-down 3 >/dev/null 2>&1; unset SLURM_CONF
  fi
done
echo "1..$n"
[ "$failed" = 0 ]
