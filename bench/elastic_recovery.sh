#!/usr/bin/env bash
# Elastic recovery time (docs/elastic_training.md), dsrun side by side with torchrun, on 4 hosts of the
# netns cluster (scripts/test_cluster.sh; root). For each cause a failure is injected on dsn3 after the
# step-6 checkpoint and the phases up to the first optimizer step of the re-formed world are timed from the
# launchers' own lines and the ranks' output, each stamped when it was printed.
#
# dsrun: examples/train_mlp, --elastic_training with min 2, checkpoints every 2 steps.
#   detect  injection -> dsrun noticed (the restart line's "ranks running X s after detection", back-dated)
#   start   detection -> every rank of the new world running (X)
#   load    ranks running -> rank 0 printed "resumed from step S" (process start, rendezvous, checkpoint load)
#   step    resumed -> the first "step N loss" line of the new world
# torchrun (Debian's torch 1.13, /usr/bin/python3): bench/elastic_peer.py (the same MLP as plain DDP, Adam,
# Gloo, checkpoints every 2 steps) under one torchrun agent per host, --nnodes 2:4, c10d rendezvous hosted by
# dsn1's agent, --max_restarts 3, every other setting torchrun's default (--monitor_interval 5, the
# rendezvous' 30 s last call). Each agent runs in its own UTS namespace named after its host, so the
# MASTER_ADDR it publishes (its hostname) and Gloo's device resolve to the host's address.
#   detect  injection -> the first agent's "will restart worker group" line
#   start   detection -> the last agent's "Starting worker group" (re-rendezvous done, ranks being started)
#   load    -> rank 0 printed "resumed from step S" (process start, process group, checkpoint load)
#   step    resumed -> the first "step N loss" line of the new world
# A world that has not stepped WAIT_S (60) seconds after the injection counts as no recovery, and every
# process of both launchers is stopped after each run (checked: none may be left).
# Causes: a rank killed -9 (rank), its host's agent killed -9 (agent), its host's link cut silently (silent).
# The dsrun and torchrun runs alternate (same machine load). Prints one markdown table per launcher (medians
# over --runs runs, default 3) and their ratio. Run it under the integration lock.
# --no_dsrun times torchrun alone (no build needed).
# usage: bench/elastic_recovery.sh [--runs N] [--no_torchrun | --no_dsrun] [BUILD_DIR]
set -euo pipefail
runs=3 torchrun=1 dsrun=1
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --no_torchrun) torchrun=0; shift ;;
    --no_dsrun) dsrun=0; shift ;;
    -*) echo "elastic_recovery.sh: unknown option '$1' (usage: [--runs N] [--no_torchrun | --no_dsrun] [BUILD_DIR])" >&2; exit 2 ;;
    *) break ;;
  esac
done
BUILD=$(readlink -f "${1:-build}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLUSTER=$ROOT/scripts/test_cluster.sh DSRUN=$BUILD/launcher/dsrun AGENT=$BUILD/agent/dsrun-agent
TRAIN=$BUILD/examples/train_mlp CONFIG=$ROOT/tests/runtime/core/train_mlp_elastic.json
PEER=$ROOT/bench/elastic_peer.py TORCH_PYTHON=/usr/bin/python3 WAIT_S=60
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
ST=$DSRUN_CLUSTER_STATE
[ "$(id -u)" -eq 0 ] || { echo "elastic_recovery.sh: needs root (network namespaces)" >&2; exit 1; }
[ "$dsrun" = 1 ] || [ "$torchrun" = 1 ] || { echo "elastic_recovery.sh: --no_torchrun and --no_dsrun leave nothing to time" >&2; exit 2; }
for f in "$DSRUN" "$AGENT" "$TRAIN"; do
  [ "$dsrun" = 0 ] || [ -x "$f" ] || { echo "elastic_recovery.sh: $f not built (ninja -C $BUILD dsrun dsrun-agent train_mlp)" >&2; exit 1; }
done
if [ "$torchrun" = 1 ] && ! "$TORCH_PYTHON" -c 'import torch.distributed.run' 2>/dev/null; then
  echo "elastic_recovery.sh: $TORCH_PYTHON has no torch.distributed.run (python3-torch); --no_torchrun skips torchrun" >&2
  exit 1
fi
WORK=$(mktemp -d /tmp/dsrun-elastic-bench.XXXXXX); chmod 755 "$WORK"
trap 'ip link set vdsn3 up 2>/dev/null; torchrun_stop 2>/dev/null; "$CLUSTER" down 4 >/dev/null 2>&1; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
if [ "$dsrun" = 1 ]; then
  "$DSRUN" --make_tls "$WORK/tls" >/dev/null
  chmod -R go+rX "$WORK/tls"; chmod 600 "$WORK/tls/key.pem"
fi
"$CLUSTER" up 4 >/dev/null
printf 'dsn1 slots=1\ndsn2 slots=1\ndsn3 slots=1\ndsn4 slots=1\n' >"$WORK/hostfile"
printf 'OMP_NUM_THREADS=1\n' >"$WORK/env"
now() { echo "$EPOCHREALTIME"; }
rank_pid() {  # rank_pid RANK: the pid of the training rank RANK (one /proc for every namespace)
  local e
  for e in $(grep -l "DSRUN_JOB_ID=" /proc/[0-9]*/environ 2>/dev/null); do
    if tr '\0' '\n' <"$e" 2>/dev/null | grep -qx "RANK=$1"; then e=${e#/proc/}; echo "${e%/environ}"; return 0; fi
  done
  return 1
}
# Bash's own clock: a fork per line would fall behind torchrun's log and stamp lines late.
stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }
wait_for() {  # wait_for SECONDS CMD...: until CMD succeeds (0) or SECONDS pass (1)
  local end; end=$(($(date +%s) + $1)); shift
  until "$@"; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.1; done
}
inject() {  # inject CAUSE RANK_PID AGENT_PID: the failure on dsn3
  case $1 in
    rank) kill -9 "$2" ;;
    agent) kill -9 "$3" ;;
    silent) ip link set vdsn3 down ;;
  esac
}

# --- dsrun ---
dsrun_checkpointed() { [ "$(sed 's/global_step//' "$1/latest" 2>/dev/null || echo 0)" -ge 6 ]; }
dsrun_stepped() { awk '/dsrun: elastic restart/ {r = 1} r && / step [0-9]+ loss / {f = 1} END {exit !f}' "$1" 2>/dev/null; }
dsrun_run() {  # dsrun_run CAUSE OUT: prints "detect start load step" seconds, or "none"
  local cause=$1 out=$2 ckpt=$WORK/ckpt
  rm -rf "$ckpt"; mkdir -p "$ckpt"
  "$CLUSTER" agents 4 "$AGENT" "$WORK/tls" >/dev/null
  (cd "$WORK" && DS_ENV_FILE="$WORK/env" "$DSRUN" --launcher agent --tls_dir "$WORK/tls" -H "$WORK/hostfile" \
     --elastic_training --min_elastic_nodes 2 --master_addr 10.77.0.11 --kill_grace_s 2 --no_python "$TRAIN" \
     --deepspeed_config "$CONFIG" --hidden 256 --layers 3 --steps 100000 --checkpoint_dir "$ckpt" --save_every 2 \
     2>&1 | stamp >"$out") &
  local job=$! recovered=1
  wait_for 120 dsrun_checkpointed "$ckpt" || { echo "elastic_recovery.sh: dsrun wrote no step-6 checkpoint in 120 s (see $out)" >&2; exit 1; }
  local t0; t0=$(now)
  inject "$cause" "$(rank_pid 2)" "$(cat "$ST/agent_dsn3.pid")"  # dsn3 holds rank 2 in the first world
  [ "$cause" = agent ] && rm -f "$ST/agent_dsn3.pid"
  wait_for "$WAIT_S" dsrun_stepped "$out" || recovered=0
  pkill -INT -f "$DSRUN --launcher agent" || true
  wait "$job" 2>/dev/null || true
  if [ "$cause" = silent ]; then ip link set vdsn3 up; fi
  [ "$recovered" = 1 ] || { echo none; return; }
  awk -v t0="$t0" '
    /dsrun: elastic restart/ && !r { r = $1; match($0, /ranks running [0-9.]+ s/); x = substr($0, RSTART + 14, RLENGTH - 16); next }
    r && / resumed from step / && !l { l = $1 }
    r && / step [0-9]+ loss / && !s { s = $1 }
    END { d = r - x; printf "%.2f %.2f %.2f %.2f\n", d - t0, x, l - r, s - l }' "$out"
}

# --- torchrun ---
trun_id="" trun_port=29600
trun_pids() {  # this run's agents and ranks: DSRUN_BENCH_RUN in their environment (the ranks inherit it)
  [ -n "$trun_id" ] || return 0
  { grep -lzsx "DSRUN_BENCH_RUN=$trun_id" /proc/[0-9]*/environ || true; } | cut -d/ -f3
}
torchrun_stop() {  # SIGKILL every agent and rank of this run; fails naming any that survive 5 s
  local p left
  for p in $(trun_pids); do kill -9 "$p" 2>/dev/null || true; done
  wait_for 5 test -z "$(trun_pids)" && return 0
  left=$(trun_pids | tr '\n' ' ')
  echo "elastic_recovery.sh: torchrun processes still running after SIGKILL: $left" >&2
  return 1
}
dsn3_proc() {  # dsn3_proc agent|rank: the pid of this run's torchrun agent or rank on dsn3
  local p
  for p in $(ip netns pids dsn3); do
    case $1 in
      agent) grep -qzsx "DSRUN_BENCH_RUN=$trun_id" "/proc/$p/environ" && grep -qzsx torch.distributed.run "/proc/$p/cmdline" ;;
      rank) grep -qzsx "DSRUN_BENCH_RUN=$trun_id" "/proc/$p/environ" && grep -qzsx "TORCHELASTIC_RUN_ID=$trun_id" "/proc/$p/environ" ;;
    esac && { echo "$p"; return 0; }
  done
  return 1
}
trun_merged() { sort -n -s -k1,1 "$1".dsn*; }  # every host's stamped output in time order
trun_checkpointed() { grep -q ' step 7 loss ' "$1.dsn1"; }  # rank 0 prints step 7 after saving step 6
trun_stepped() {  # a "resumed" line of rank 0 after T0, then a step line
  trun_merged "$1" | awk -v t0="$2" '$1 > t0 && / resumed from step [0-9]+ rank 0 / {r = 1} r && / step [0-9]+ loss / {f = 1} END {exit !f}'
}
torchrun_run() {  # torchrun_run CAUSE OUT: prints "detect start load step import" seconds (import: the share
  # of load rank 0 spent importing torch), or "none kept-stepping|stalled"
  local cause=$1 out=$2 ckpt=$WORK/tckpt n recovered=1
  rm -rf "$ckpt" "$WORK/tlog"; mkdir -p "$ckpt"
  trun_id=bench$$x$RANDOM trun_port=$((trun_port + 1))
  for n in 1 2 3 4; do
    # --redirects/--tee 2: the ranks' stdout straight to the agent's, stderr teed (torch 1.13 on Python
    # 3.11 cannot parse their default "0": enum iteration skips the zero member).
    # The subshell's own stderr is dropped: it reports the SIGKILLed agent ("Killed ..."), as bash does.
    (ip netns exec "dsn$n" unshare --uts -- sh -c "hostname dsn$n && exec env DSRUN_BENCH_RUN=$trun_id OMP_NUM_THREADS=1 LOGLEVEL=INFO \
       PYTHONUNBUFFERED=1 $TORCH_PYTHON -m torch.distributed.run --nnodes 2:4 --nproc_per_node 1 \
       --rdzv_backend c10d --rdzv_endpoint 10.77.0.11:$trun_port --rdzv_id $trun_id \
       --rdzv_conf is_host=$([ $n = 1 ] && echo 1 || echo 0) --max_restarts 3 --redirects 2 --tee 2 \
       --log_dir $WORK/tlog/dsn$n $PEER --checkpoint_dir $ckpt" 2>&1 || true) 2>/dev/null | stamp >"$out.dsn$n" &
  done
  wait_for 120 trun_checkpointed "$out" || { echo "elastic_recovery.sh: torchrun wrote no step-6 checkpoint in 120 s (see $out.dsn*)" >&2; exit 1; }
  local t0 rank agent
  if ! rank=$(dsn3_proc rank) || ! agent=$(dsn3_proc agent); then
    echo "elastic_recovery.sh: no torchrun agent and rank of run $trun_id on dsn3 (see $out.dsn3)" >&2; exit 1
  fi
  t0=$(now)
  inject "$cause" "$rank" "$agent"
  wait_for "$WAIT_S" trun_stepped "$out" "$t0" || recovered=0
  local last; last=$(trun_merged "$out" | awk '/ step [0-9]+ loss / {s = $1} END {print s}')
  torchrun_stop
  if [ "$cause" = silent ]; then ip link set vdsn3 up; fi
  wait  # the output pipelines end with their processes
  if [ "$recovered" = 0 ]; then  # did the old world go on stepping (a rank left unsupervised) or stall?
    awk -v l="$last" -v e="$(now)" 'BEGIN {print (e - l < 10) ? "none kept-stepping" : "none stalled"}'
    return
  fi
  trun_merged "$out" | awk -v t0="$t0" '
    $1 <= t0 { next }
    / will restart worker group/ && !d { d = $1 }
    / Starting worker group/ && d && !l { g = $1 }
    / rank 0 python started/ && d && !l { p = $1 }
    / rank 0 torch imported/ && d && !l { i = $1 }
    / resumed from step [0-9]+ rank 0 / && !l { l = $1 }
    l && / step [0-9]+ loss / && !s { s = $1 }
    END { printf "%.2f %.2f %.2f %.2f %.2f\n", d - t0, g - d, l - g, s - l, i - p }'
}

# --- tables ---
median() { sort -n | awk '{v[NR] = $1} END {if (NR) printf "%.2f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
no_recovery() {  # no_recovery TIMES_FILE: what the runs without a re-formed world saw
  if grep -q 'none kept-stepping' "$1"; then
    echo "no re-formed world within $WAIT_S s: the old world kept stepping with dsn3's rank unsupervised"
  else
    echo "no recovery within $WAIT_S s: training stalled"
  fi
}
total() {  # total TIMES_FILE: median failure -> first step over the recovered runs; empty when none
  { grep -v '^none' "$1" || true; } | awk '{printf "%.2f\n", $1 + $2 + $3 + $4}' | median
}
row() {  # row TIMES_FILE: "detect | start | load | step | total" medians over the recovered runs
  local f=$1 ok cols=() c all
  ok=$(grep -vc '^none' "$f" || true)
  if [ "$ok" = 0 ]; then echo "- | - | - | - | $(no_recovery "$f") (0 of $runs runs)"; return; fi
  for c in 1 2 3 4; do cols+=("$(grep -v '^none' "$f" | awk -v c=$c '{print $c}' | median)"); done
  all=$(total "$f")
  [ "$ok" = "$runs" ] || all="$all ($ok of $runs runs; the others: $(no_recovery "$f"))"
  echo "${cols[0]} | ${cols[1]} | ${cols[2]} | ${cols[3]} | $all"
}
causes="rank agent silent"
for cause in $causes; do
  : >"$WORK/$cause.dsrun"; : >"$WORK/$cause.torchrun"
  for i in $(seq "$runs"); do
    # Not in a pipeline: the runs set the state the EXIT trap cleans up, and their errors end the script.
    if [ "$dsrun" = 1 ]; then
      dsrun_run "$cause" "$WORK/$cause.$i.dsrun.out" >"$WORK/times"
      tee -a "$WORK/$cause.dsrun" <"$WORK/times" | sed "s/^/# dsrun $cause run $i: /" >&2
    fi
    if [ "$torchrun" = 1 ]; then
      torchrun_run "$cause" "$WORK/$cause.$i.torchrun.out" >"$WORK/times"
      tee -a "$WORK/$cause.torchrun" <"$WORK/times" | sed "s/^/# torchrun $cause run $i: /" >&2
    fi
  done
done
header() {
  echo "| cause | detect (s) | ranks running (s) | start + rendezvous + checkpoint load (s) | first step (s) | failure -> first step (s) |"
  echo "|---|---|---|---|---|---|"
}
if [ "$dsrun" = 1 ]; then
  echo "dsrun (examples/train_mlp, --elastic_training):"; header
  for cause in $causes; do echo "| $cause | $(row "$WORK/$cause.dsrun") |"; done
  echo
fi
[ "$torchrun" = 1 ] || exit 0
echo "torchrun (bench/elastic_peer.py, c10d rendezvous, --max_restarts 3):"; header
for cause in $causes; do echo "| $cause | $(row "$WORK/$cause.torchrun") |"; done
imp=$(for cause in $causes; do { grep -v '^none' "$WORK/$cause.torchrun" || true; } | awk '{print $5}'; done | median)
[ -z "$imp" ] || echo "(of torchrun's start + rendezvous + checkpoint load, rank 0's \`import torch\`: $imp s, median)"
[ "$dsrun" = 1 ] || exit 0
echo; echo "| cause | dsrun failure -> first step (s) | torchrun (s) | dsrun / torchrun |"; echo "|---|---|---|---|"
for cause in $causes; do
  d=$(total "$WORK/$cause.dsrun") t=$(total "$WORK/$cause.torchrun")
  if [ -z "$d" ]; then echo "| $cause | no recovery within $WAIT_S s | ${t:-$(no_recovery "$WORK/$cause.torchrun")} | - |"
  elif [ -z "$t" ]; then echo "| $cause | $d | $(no_recovery "$WORK/$cause.torchrun") | - |"
  else echo "| $cause | $d | $t | $(awk -v d="$d" -v t="$t" 'BEGIN {printf "%.2f", d / t}') |"; fi
done
