#!/bin/bash
# An agent that refuses what dsrun sends it (its tree launch, as an agent that already ran the job id answers)
# keeps dsrun's connection and will never start or report that part of the job. Three cases, trees of width 2 on
# loopback addresses, real agents except the stand-in (old_agent.py) that refuses:
#  1. an older root that does not hold tree launches (refuse_preprobe) refuses the plain launch it gets once the
#     rest of the tree is assembled: dsrun must fail the job in the agent's words, stop the ranks that did
#     start, and exit, instead of waiting for the refused ranks' ends forever (the hang docs/benchmarks.md
#     "Launch at scale" describes). 127.0.0.8 (refusing) with its child 127.0.0.2, 127.0.0.3 with 127.0.0.4;
#  2. a root that holds (refuse) refuses its probed launch: nothing started anywhere, dsrun says so;
#  3. with --no_mesh_probe, a leaf two levels down refuses its launch: the tree is still assembled before any
#     rank starts (docs/agent.md "The tree is assembled before it starts"), so nothing started anywhere and
#     dsrun says so, as the star does for an agent that refuses. Before, the other subtrees' ranks started and
#     were then stopped. 127.0.0.2 > 127.0.0.3 > 127.0.0.1 (refusing), 127.0.0.2 > 127.0.0.4; 127.0.0.5 >
#     127.0.0.6, 127.0.0.7.
#   agent_refusal.sh DSRUN DSRUN_AGENT [PYTHON]
set -u
DSRUN=$(readlink -f "${1:?usage: agent_refusal.sh DSRUN DSRUN_AGENT [PYTHON]}")
AGENT=$(readlink -f "${2:?usage: agent_refusal.sh DSRUN DSRUN_AGENT [PYTHON]}")
PY=${3:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
t=$(mktemp -d /tmp/dsrun-refusal.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$t"; }
trap cleanup EXIT
port=$((31000 + RANDOM % 400))
"$DSRUN" --make_tls "$t/tls" >/dev/null || { not_ok "dsrun --make_tls"; finish; }
for a in 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7 127.0.0.8; do
  "$DSRUN" --make_node_cert "$t/tls" --host "$a" --out "$t/node-$a" >/dev/null || { not_ok "--make_node_cert $a"; finish; }
done
"$PY" "$HERE/old_agent.py" "$t/node-127.0.0.1" "$port" refuse 127.0.0.1 >"$t/fake.out" 2>&1 &
pids+=($!)
"$PY" "$HERE/old_agent.py" "$t/node-127.0.0.8" "$port" refuse_preprobe 127.0.0.8 >"$t/old.out" 2>&1 &
pids+=($!)
for a in 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7; do
  "$AGENT" --listen "$a:$port" --tls_dir "$t/node-$a" --kill_grace_s 1 >"$t/agent-$a.log" 2>&1 &
  pids+=($!)
done
for log in fake.out old.out agent-127.0.0.{2,3,4,5,6,7}.log; do
  wait_for 10 grep -q listening "$t/$log" || { not_ok "$log: listening"; cat "$t/$log"; finish; }
done
printf '127.0.0.8 slots=1\n127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n' >"$t/hostfile-old"
printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n' >"$t/hostfile"
# Host order is the tree's pre-order: 127.0.0.1 is the third host, 127.0.0.3's child (agent_tree_plan.h).
printf '127.0.0.%s slots=1\n' 2 3 1 4 5 6 7 >"$t/hostfile-deep"
# Each rank that starts says so, then sleeps far longer than the test: only the stop ends it.
printf '#!/bin/sh\ntouch "%s/started-$RANK"\nexec sleep 300\n' "$t" >"$t/rank.sh"
chmod +x "$t/rank.sh"
# A bound far above what the job needs (about 2 s) but below the stop's own deadline (grace + 15 s + twice the
# heartbeat budget + the connect timeout): dsrun must end by itself, not by that deadline.
timeout -k 5 25 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$t/tls" -H "$t/hostfile-old" --tree_width 2 \
  --no_mesh_probe --kill_grace_s 1 --master_addr 127.0.0.3 --no_python --no_local_rank "$t/rank.sh" \
  >"$t/out" 2>"$t/err"
rc=$?
job=$(sed -n 's/^refused //p' "$t/old.out")
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ -n "$job" ] &&
   grep -q "agent 127.0.0.8:$port (for its subtree, 127.0.0.8 to 127.0.0.2, 2 hosts): tree launch refused: .*a replay" "$t/err"; then
  ok "an older root that refuses its tree launch fails the job in its words (exit $rc), without waiting for its subtree"
else
  not_ok "a refused root launch ends dsrun with its words (rc $rc; 124: dsrun waited for ranks nobody will start)"
  sed 's/^/#   | /' "$t/err"; cat "$t/fake.out"
fi
check "the refused subtree started nothing (127.0.0.2's rank 1)" test ! -e "$t/started-1"
if [ -n "$job" ] && wait_for 10 test "$(job_procs "$job")" = 0; then
  ok "nothing of job $job is left running"
else
  not_ok "nothing of job ${job:-?} is left running ($(job_procs "${job:-none}") processes)"
fi
# A root that holds tree launches refusing its probed launch (the mesh probe on, the default): nothing has started anywhere, so
# the job is refused before any rank starts, naming the refusal, instead of waiting for its probe report.
rm -f "$t"/started-*
timeout -k 5 25 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$t/tls" -H "$t/hostfile" --tree_width 2 \
  --kill_grace_s 1 --master_addr 127.0.0.3 --no_python --no_local_rank "$t/rank.sh" >"$t/out" 2>"$t/err"
rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] &&
   grep -q "cannot start the job, nothing was started: agent 127.0.0.1:$port.*tree launch refused: .*a replay" "$t/err" &&
   [ "$(ls "$t" | grep -c '^started-')" = 0 ]; then
  ok "a root that refuses its probed launch ends the job before any rank starts (exit $rc)"
else
  not_ok "a refused probed launch ends the job at once, nothing started (rc $rc)"; sed 's/^/#   | /' "$t/err"
fi
# A leaf two levels down refusing, without the mesh probe: the tree is assembled before anything starts, so its
# refusal, reported by its parent, ends the job with nothing started anywhere (before: the other ranks started).
rm -f "$t"/started-*
timeout -k 5 25 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$t/tls" -H "$t/hostfile-deep" --tree_width 2 \
  --no_mesh_probe --kill_grace_s 1 --master_addr 127.0.0.2 --no_python --no_local_rank "$t/rank.sh" \
  >"$t/out" 2>"$t/err"
rc=$?
job=$(sed -n 's/^refused //p' "$t/fake.out" | tail -n 1)
if [ "$rc" = 1 ] &&
   grep -q "^dsrun: cannot start the job, nothing was started: agent 127.0.0.1 (via 127.0.0.2): agent 127.0.0.1:$port: tree launch refused: .*a replay" "$t/err"; then
  ok "--no_mesh_probe: a leaf two levels down refusing its launch ends the job before any rank starts (exit 1)"
else
  not_ok "--no_mesh_probe: a refusing leaf ends the job with nothing started (rc $rc)"; sed 's/^/#   | /' "$t/err"
fi
check "--no_mesh_probe: no rank of the 7 started anywhere ($(ls "$t" | grep -c '^started-') did)" \
  test "$(ls "$t" | grep -c '^started-')" = 0
check "--no_mesh_probe: every live agent held the launch and none was told to go" \
  test "$(grep -l "job ${job:-none} held until go, no mesh probe target here" "$t"/agent-127.0.0.*.log | wc -l)" = 6 -a \
  "$(grep -c "job ${job:-none}: go" "$t"/agent-127.0.0.*.log | grep -vc ':0$')" = 0
if [ -n "$job" ] && wait_for 10 test "$(job_procs "$job")" = 0; then
  ok "nothing of job $job is left running"
else
  not_ok "nothing of job ${job:-?} is left running ($(job_procs "${job:-none}") processes)"
fi
finish
