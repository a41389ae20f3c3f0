#!/bin/bash
# Cost of the agent backend's all-pairs mesh probe (on by default, docs/agent.md): time from dsrun
# start to exit for N hosts x 1 rank of /bin/true through dsrun-agents on the test cluster of
# scripts/test_cluster.sh, with the probe and with --no_mesh_probe (interleaved), plus the probe's own
# duration as dsrun logs it (at DEBUG). Prints a markdown table of medians. Run as root from the repository root:
#   bench/mesh_probe.sh [--runs N] [--hosts N] [--build DIR]
# The cluster is brought up (and torn down afterwards) by this script; take the integration lock first.
set -euo pipefail
RUNS=10; HOSTS=4; BUILD=build
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--hosts N] [--build DIR]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "mesh_probe.sh: must run as root (test cluster)" >&2; exit 1; }
DSRUN=$(realpath "$BUILD/launcher/dsrun"); AGENT=$(realpath "$BUILD/agent/dsrun-agent")
[ -x "$DSRUN" ] && [ -x "$AGENT" ] || { echo "mesh_probe.sh: $DSRUN or $AGENT not built" >&2; exit 1; }
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
WORK=$(mktemp -d /tmp/dsrun-bench-mesh.XXXXXX)
trap 'scripts/test_cluster.sh down "$HOSTS" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
scripts/test_cluster.sh up "$HOSTS" >/dev/null
"$DSRUN" --make_tls "$WORK/tls" >/dev/null
port=$((29700 + RANDOM % 250))
DSRUN=$DSRUN scripts/test_cluster.sh agents "$HOSTS" "$AGENT" "$WORK/tls" "$port" >/dev/null
scripts/test_cluster.sh hostfile "$HOSTS" 1 > "$WORK/hostfile"
COMMON=(-H "$WORK/hostfile" --launcher agent --agent_port "$port" --tls_dir "$WORK/tls" --master_addr 10.77.0.11
        --no_python --no_local_rank)

now() { date +%s.%N; }
plain=""; probed=""; probe_ms=""
for _ in $(seq "$RUNS"); do  # interleaved, so load changes hit both alike
  t0=$(now); "$DSRUN" "${COMMON[@]}" --no_mesh_probe /bin/true >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  t1=$(now); plain+="$(echo "$t1 - $t0" | bc) "
  t0=$(now); DSRUN_LOG_LEVEL=debug "$DSRUN" "${COMMON[@]}" /bin/true >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  t1=$(now); probed+="$(echo "$t1 - $t0" | bc) "
  probe_ms+="$(sed -n 's/.*mesh probe: [0-9]* pairs of [0-9]* agents connected in \([0-9]*\) ms.*/\1/p' "$WORK/err") "
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.3f", m}'; }
pairs=$((HOSTS * (HOSTS - 1)))
echo "| agent backend, $HOSTS hosts x 1 rank of /bin/true | median ($RUNS runs) |"
echo "|---|---|"
echo "| dsrun --no_mesh_probe | $(echo "$plain" | median) s |"
echo "| dsrun (mesh probe, the default) | $(echo "$probed" | median) s |"
echo "| the probe itself ($pairs pairs, as dsrun logs it) | $(echo "$probe_ms" | median) ms |"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
