#!/usr/bin/env bash
# The agent tree end to end (--tree_width, docs/agent.md "Tree launch") on the network-namespace cluster
# (scripts/test_cluster.sh) with four real dsrun-agents and width 2: dsrun dials only the roots (dsn1, dsn3),
# each forwards the signed launch to its child (dsn2, dsn4). A job's ranks all run on their own hosts with
# their output tagged once; a failing rank on a leaf decides the exit code and is named; a Ctrl-C reaches every
# rank and ends with 130; a leaf's agent killed mid-job is reported by its root as lost, naming the host; a
# root's agent killed mid-job costs only its own rank (dsrun adopts its child). The mesh probe runs through the
# tree (on by default): a broken pair (exit 2) or an agent missing below a root (exit 1) ends the launch with no
# rank started anywhere. No process of any job is left anywhere. Needs root; run under the integration lock.
# Sharness style.
# usage: agent_tree.sh DSRUN DSRUN_AGENT
set -u
DSRUN=$(readlink -f "${1:?usage: agent_tree.sh DSRUN DSRUN_AGENT}")
AGENT=$(readlink -f "${2:?usage: agent_tree.sh DSRUN DSRUN_AGENT}")
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
CLUSTER=$ROOT/scripts/test_cluster.sh
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
ST=$DSRUN_CLUSTER_STATE
require_root "the agent tree test"
WORK=$(mktemp -d /tmp/dsrun-tree.XXXXXX); chmod 755 "$WORK"
cleanup() { "$CLUSTER" down 4 >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
show() { echo "# --- $1.err"; sed 's/^/# /' "$WORK/$1.err"; }

"$DSRUN" --make_tls "$WORK/tls" >/dev/null
chmod -R go+rX "$WORK/tls"; chmod 600 "$WORK/tls/key.pem"
if ! "$CLUSTER" up 4 >"$WORK/up.log" 2>&1; then not_ok "test cluster comes up"; tail -3 "$WORK/up.log"; exit 1; fi
"$CLUSTER" agents 4 "$AGENT" "$WORK/tls" >"$WORK/agents.log" 2>&1 || { not_ok "agents start"; cat "$WORK/agents.log"; exit 1; }
printf 'dsn1 slots=1\ndsn2 slots=1\ndsn3 slots=1\ndsn4 slots=1\n' >"$WORK/hostfile"
# A rank: records its job id, says where it runs, then acts by MODE (ok | fail_on_dsn4 | wait).
cat >"$WORK/rank.sh" <<'RANK'
#!/bin/sh
dir=$1 mode=$2
echo "$DSRUN_JOB_ID" >"$dir/jobid.$RANK"
echo "rank $RANK on $(hostname)"
case $mode in
  ok) exit 0 ;;
  fail_on_dsn4) [ "$(hostname)" = dsn4 ] && { sleep 0.3; echo "bad batch" >&2; exit 5; } ;;
esac
exec sleep 60
RANK
chmod 755 "$WORK/rank.sh"
# tree TAG MODE: a 4-host job through the tree, in the background ($dpid).
tree() {
  mkdir -p "$WORK/$1"; chmod 777 "$WORK/$1"
  env --default-signal "$DSRUN" --launcher agent --tls_dir "$WORK/tls" -H "$WORK/hostfile" --tree_width 2 \
    --master_addr 10.77.0.11 --kill_grace_s 2 --no_python --no_local_rank --tag_output "$WORK/rank.sh" "$WORK/$1" "$2" \
    >"$WORK/$1.out" 2>"$WORK/$1.err" &
  dpid=$!
}
job_id() { cat "$WORK/$1"/jobid.0 2>/dev/null; }
ended() {  # ended SECONDS: dsrun ($dpid) ended within SECONDS; rc in $rc
  for _ in $(seq $(($1 * 10))); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$dpid" 2>/dev/null && { kill -9 "$dpid"; wait "$dpid" 2>/dev/null; rc=timeout; return 1; }
  wait "$dpid"; rc=$?
}
nothing_left() {  # nothing_left TAG: no process of the job on any host (one /proc for all namespaces)
  local id; id=$(job_id "$1")
  for _ in $(seq 100); do [ -n "$id" ] && [ "$(job_procs "$id")" = 0 ] && return 0; sleep 0.1; done
  return 1
}

# 1. Every rank runs on its own host; dsrun dialled only the roots.
tree ok ok
ended 60
check "a 4-host job through a width-2 tree exits 0" test "$rc" = 0
for r in 0 1 2 3; do
  check "rank $r printed once, tagged, on dsn$((r + 1))" test "$(grep -cx "dsn$((r + 1)):$r | rank $r on dsn$((r + 1))" "$WORK/ok.out")" = 1
done
id=$(job_id ok)
check "each root (dsn1, dsn3) forwarded the launch to one child" \
  sh -c "grep -q 'job $id: dialing 1 tree child(ren)' $ST/agent_dsn1.log && grep -q 'job $id: dialing 1 tree child(ren)' $ST/agent_dsn3.log"
check "each leaf (dsn2, dsn4) accepted the signed tree launch" \
  sh -c "grep -q 'tree launch of job $id signed by' $ST/agent_dsn2.log && grep -q 'tree launch of job $id signed by' $ST/agent_dsn4.log"
check "every node held the launch for the mesh probe (3 targets each), then started on go" \
  sh -c "for h in dsn1 dsn2 dsn3 dsn4; do grep -q 'job $id held for its mesh probe: 3 target(s) here' $ST/agent_\$h.log &&
         grep -q 'job $id: go' $ST/agent_\$h.log || exit 1; done"
[ "$rc" = 0 ] || show ok

# 2. A rank failing on a leaf (dsn4, below dsn3): its code, its name, its stderr in the root cause.
tree fail fail_on_dsn4
ended 60
check "a leaf's failing rank decides the exit code (5)" test "$rc" = 5
check "the failure line names rank 3 on dsn4" grep -qE "rank 3 \(dsn4 pid [0-9]+\) exited with code 5" "$WORK/fail.err"
check "the root-cause block quotes its stderr" grep -q "bad batch" "$WORK/fail.err"
check "nothing of the failed job is left anywhere" nothing_left fail
[ "$rc" = 5 ] || show fail

# 3. Ctrl-C: every rank gets it through the tree, dsrun ends with 130.
tree int wait
wait_for 30 sh -c "[ \$(ls $WORK/int | grep -c jobid) -ge 4 ]" || not_ok "the Ctrl-C job's 4 ranks start"
kill -INT "$dpid"
ended 30
check "Ctrl-C through the tree ends dsrun with 130" test "$rc" = 130
check "the notice counts 4 ranks on 4 nodes" grep -q "received SIGINT; forwarded it to 4 ranks on 4 nodes" "$WORK/int.err"
check "nothing of the interrupted job is left anywhere" nothing_left int
[ "$rc" = 130 ] || show int

# 4. The program is missing on every host: each agent's refusal travels up and dsrun ends at once, naming it.
env --default-signal "$DSRUN" --launcher agent --tls_dir "$WORK/tls" -H "$WORK/hostfile" --tree_width 2 \
  --master_addr 10.77.0.11 --no_python "$WORK/no-such-program" >"$WORK/missing.out" 2>"$WORK/missing.err" &
dpid=$!
ended 60
check "a program missing on every host fails the tree job with 1, without a wait" test "$rc" = 1
check "the relayed line names the program" grep -q "spawn '$WORK/no-such-program': No such file or directory" "$WORK/missing.err"
[ "$rc" = 1 ] || show missing

# 6. The mesh probe through the tree: dsn2 loses its route to dsn4 (both still reach their parents and dsrun).
# Every node gets the launch and probes; the broken pair is named and nothing starts anywhere (exit 2).
ip -n dsn2 route add unreachable 10.77.0.14/32
tree probe ok
ended 60
ip -n dsn2 route del unreachable 10.77.0.14/32
check "a broken pair found through the tree ends the launch with 2" test "$rc" = 2
check "the line names the pair and says nothing was started" \
  grep -qE "mesh probe: dsn2 cannot reach dsn4:[0-9]+: No route to host( \(and [0-9]+ more\))?; nothing was started" "$WORK/probe.err"
check "no rank ran anywhere" test -z "$(ls "$WORK/probe")"
id=$(grep -o 'tree launch of job [^ ]*' "$ST/agent_dsn4.log" | tail -1 | cut -d' ' -f5)
check "all 4 nodes held that launch and none was told to go" \
  sh -c "[ -n '$id' ] && for h in dsn1 dsn2 dsn3 dsn4; do grep -q 'job $id held for its mesh probe' $ST/agent_\$h.log &&
         ! grep -q 'job $id: go' $ST/agent_\$h.log || exit 1; done"
[ "$rc" = 2 ] || show probe

# 5. A leaf's agent killed -9 mid-job: its root reports it lost, dsrun names the host and fails the job.
tree lost wait
wait_for 30 sh -c "[ \$(ls $WORK/lost | grep -c jobid) -ge 4 ]" || not_ok "the lost-leaf job's 4 ranks start"
kill -9 "$(cat "$ST/agent_dsn2.pid")"
ended 60
check "a leaf's agent lost mid-job fails the job (exit 1)" test "$rc" = 1
check "the failure names dsn2, relayed by dsn1, and its lost rank" \
  grep -qE "agent dsn2 \(via dsn1\): .*lost rank 1 \(dsn2 pid [0-9]+\)" "$WORK/lost.err"
# The killed agent's rank dies with it (PR_SET_PDEATHSIG), the others are stopped through the tree.
check "nothing of the job is left anywhere" nothing_left lost
[ "$rc" = 1 ] || show lost

# 7. With dsn2's agent gone, a new launch finds it while probing: its parent names it, nothing starts (exit 1).
tree down ok
ended 60
check "an agent missing below a root ends the launch with 1 before anything starts" test "$rc" = 1
check "the line names dsn2 via its parent dsn1" \
  grep -qE "cannot start the job, nothing was started: agent dsn2 \(via dsn1\): " "$WORK/down.err"
check "no rank ran anywhere" test -z "$(ls "$WORK/down")"
[ "$rc" = 1 ] || show down

# 8. A root's agent (dsn1, dsn2's parent) killed -9 mid-job: only dsn1's rank is lost. dsrun adopts dsn2
# itself (TreeAdopt; dsn2 waits for an adopter instead of stopping), names dsn1 alone and stops dsn2's rank
# through the adopted edge.
# dsn2's agent, killed in 5, comes back first (its pid file goes: the killed one may linger as this shell's zombie).
rm -f "$ST/agent_dsn2.pid"
"$CLUSTER" agents 4 "$AGENT" "$WORK/tls" >>"$WORK/agents.log" 2>&1 || { not_ok "dsn2's agent restarts"; cat "$WORK/agents.log"; }
tree rootlost wait
wait_for 30 sh -c "[ \$(ls $WORK/rootlost | grep -c jobid) -ge 4 ]" || not_ok "the lost-root job's 4 ranks start"
kill -9 "$(cat "$ST/agent_dsn1.pid")"
ended 30  # the ranks sleep 60 s: only the job's stop ends them sooner
check "a root's agent lost mid-job fails the job (exit 1)" test "$rc" = 1
check "the failure names dsn1 and its rank 0" grep -qE "agent dsn1.*lost rank 0 \(dsn1 pid [0-9]+\)" "$WORK/rootlost.err"
check "dsn2, dsn1's child, is not counted lost" sh -c "! grep -qE 'lost rank [123]|dsn2' '$WORK/rootlost.err'"
check "dsn2 re-attached to dsrun" grep -q "re-attached here" "$ST/agent_dsn2.log"
check "dsn2's rank was stopped by the job through dsrun (SIGTERM), not by its agent giving up" \
  sh -c "grep -q 'rank 1: pid [0-9]* killed by signal 15' '$ST/agent_dsn2.log' && ! grep -q 'no ancestor adopted' '$ST/agent_dsn2.log'"
check "nothing of the lost-root job is left anywhere" nothing_left rootlost
[ "$rc" = 1 ] || show rootlost
finish
