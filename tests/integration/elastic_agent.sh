#!/usr/bin/env bash
# Elastic training on the agent backend (docs/elastic.md), on the network-namespace cluster
# (scripts/test_cluster.sh) with real dsrun-agents: restart counter, restart budget, a killed agent
# (the master's host), a silent host, scale-up when an agent starts mid-run, a partial network partition
# found by the mesh probe, waiting below the minimum,
# Ctrl-C, and no process of any job left anywhere. The ranks are shell programs (elastic_rank.sh);
# training that resumes across worlds is tested by elastic_training.sh. Needs root. Sharness style.
# usage: elastic_agent.sh DSRUN DSRUN_AGENT
set -u
DSRUN=$(readlink -f "${1:?usage: elastic_agent.sh DSRUN DSRUN_AGENT}")
AGENT=$(readlink -f "${2:?usage: elastic_agent.sh DSRUN DSRUN_AGENT}")
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=elastic_lib.sh
. "$HERE/elastic_lib.sh"
CLUSTER=$ROOT/scripts/test_cluster.sh RANKPROG=$HERE/elastic_rank.sh
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
ST=$DSRUN_CLUSTER_STATE
require_root "the elastic test suite"
WORK=$(mktemp -d /tmp/dsrun-elastic.XXXXXX); chmod 755 "$WORK"
DSRUN=$(with_test_tree "$DSRUN" "$WORK")
cleanup() { ip link set vdsn3 up 2>/dev/null; "$CLUSTER" down 4 >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
start_agents() { "$CLUSTER" agents "$1" "$AGENT" "$WORK/tls" >>"$WORK/agents.log" 2>&1; }
kill_agent() { kill -9 "$(cat "$ST/agent_dsn$1.pid")"; rm -f "$ST/agent_dsn$1.pid"; }

"$DSRUN" --make_tls "$WORK/tls" >/dev/null
chmod -R go+rX "$WORK/tls"; chmod 600 "$WORK/tls/key.pem"
if ! "$CLUSTER" up 4 >"$WORK/up.log" 2>&1; then not_ok "test cluster comes up"; tail -3 "$WORK/up.log"; exit 1; fi
start_agents 3 || { not_ok "agents start"; cat "$WORK/agents.log"; exit 1; }
printf 'dsn1 slots=1\ndsn2 slots=1\ndsn3 slots=1\ndsn4 slots=1\n' >"$WORK/hostfile"
# section N: run section N? All of them, unless DSRUN_TEST_ELASTIC_SECTIONS names some ("3 3b 4 5 5b": the CI
# variant through the agent tree); section 8 checks the jobs of the sections that ran.
section() { [ -z "${DSRUN_TEST_ELASTIC_SECTIONS:-}" ] || case " $DSRUN_TEST_ELASTIC_SECTIONS " in *" $1 "*) ;; *) return 1 ;; esac; }
# elastic TAG MODE [dsrun flags...]: runs an elastic job in the background ($dpid); its rank log is
# $WORK/TAG/starts, its output $WORK/TAG.out/.err.
elastic() {
  local tag=$1 mode=$2; shift 2
  mkdir -p "$WORK/$tag"; chmod 777 "$WORK/$tag"
  env --default-signal "$DSRUN" --launcher agent --tls_dir "$WORK/tls" -H "$WORK/hostfile" --elastic_training \
    --master_addr 10.77.0.11 --kill_grace_s 2 --no_python "$@" "$RANKPROG" "$WORK/$tag" "$mode" \
    >"$WORK/$tag.out" 2>"$WORK/$tag.err" &
  dpid=$!
}

# 1. Rank 1 fails only in the first world: one failure restart, every rank of the second world saw
#    DSRUN_RESTART_COUNT=1 (and torchrun's name), the job succeeds.
if section 1; then
elastic count fail_first --min_elastic_nodes 2 --max_elastic_nodes 3
wait_for 60 sh -c "! kill -0 $dpid 2>/dev/null"; wait "$dpid"; rc=$?
check "a rank failing once: the job restarts and succeeds" test "$rc" = 0
check "the second world's 3 ranks all saw restart count 1 under both names" \
  test "$(awk '$3 == 1 && $4 == 1' "$WORK/count/starts" | wc -l)" = 3
check "one restart line names the failed rank and the world" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; rank failure: rank 1 \(dsn2 pid [0-9]+\) exited with code 3\); hosts lost: none; added: none; world size 3 -> 3 on 3 host\(s\); ranks running [0-9.]+ s after detection$" "$WORK/count.err"
check "the summary counts it" grep -q "^dsrun: elastic summary: 1 restart(s) (1 rank failure)" "$WORK/count.err"
[ "$rc" = 0 ] || show count
fi

# 1b. --master_port 0: each world's first agent picks a free port before the world is planned, and every
#     rank of that world gets the port it picked (two worlds: the failure restart picks again).
if section 1b; then
elastic port0 fail_first --min_elastic_nodes 2 --max_elastic_nodes 3 --master_port 0
wait_for 60 sh -c "! kill -0 $dpid 2>/dev/null"; wait "$dpid"; rc=$?
picked=$(sed -n 's/.*--master_port 0: MASTER_PORT=\([0-9]*\) (free on dsn[0-9], picked by its agent).*/\1/p' "$WORK/port0.err" | tr '\n' ' ')
seen=$(sort -u "$WORK/port0/ports" | awk '{printf "%s ", $2}')
worlds=$(wc -l <"$WORK/port0/ports")/$(sort -u "$WORK/port0/ports" | wc -l)
check "--master_port 0: the job restarts once and succeeds" test "$rc" = 0
check "--master_port 0: each world's 3 ranks got the port its first agent picked (${picked:-none logged})" \
  test "$worlds ports: $seen" = "6/2 ports: $picked"
[ "$rc" = 0 ] || show port0
fi

# 2. A rank that always fails exhausts --max_restarts; dsrun exits with that rank's code. Ten failures in
#    a row (the first world and 9 restarts); section 8 checks nothing of them is left anywhere.
if section 2; then
elastic budget always_fail --min_elastic_nodes 2 --max_restarts 9
wait_for 120 sh -c "! kill -0 $dpid 2>/dev/null"; wait "$dpid"; rc=$?
check "a rank failing every time: exit 7 once the budget is spent" test "$rc" = 7
check "10 worlds ran (the first and 9 restarts)" test "$(awk '$1 == 0' "$WORK/budget/starts" | wc -l)" = 10
check "the last line says the budget is spent" \
  grep -qE "^dsrun: rank 1 \(dsn[0-9] pid [0-9]+\) exited with code 7; no restart left \(--max_restarts 9 used\)$" "$WORK/budget.err"
[ "$rc" = 7 ] || show budget
fi

# 2b. Two elastic jobs on the same hosts at once, each with one failing rank: each restarts its own ranks
#     only, and both succeed with one restart.
if section 2b; then
elastic twin1 fail_first --min_elastic_nodes 2 --max_elastic_nodes 3; twin1=$dpid
elastic twin2 fail_first --min_elastic_nodes 2 --max_elastic_nodes 3; twin2=$dpid
wait_for 60 sh -c "! kill -0 $twin1 2>/dev/null && ! kill -0 $twin2 2>/dev/null"
wait "$twin1"; rc1=$?; wait "$twin2"; rc2=$?
check "two elastic jobs on the same hosts both succeed" test "$rc1-$rc2" = 0-0
check "each ran exactly two worlds of 3 ranks" \
  test "$(lines "$WORK/twin1/starts")-$(lines "$WORK/twin2/starts")" = 6-6
one_restart() { grep -q "elastic summary: 1 restart(s) (1 rank failure)" "$1"; }
check "each had one restart" sh -c "$(declare -f one_restart); one_restart $WORK/twin1.err && one_restart $WORK/twin2.err"
fi

# 3. The master's host is lost (its agent killed -9): the job re-forms on the other two with MASTER_ADDR
#    on dsn2, and nothing of the job survives on dsn1.
if section 3; then
elastic master wait --min_elastic_nodes 2
wait_for 30 at_least "$WORK/master/starts" 3 || not_ok "master: the first world's ranks start"
kill_agent 1
wait_for 30 at_least "$WORK/master/starts" 5 || not_ok "master: the second world's ranks start"
check "the re-formed world has 2 ranks with MASTER_ADDR on dsn2" \
  test "$(awk 'NR > 3 && $2 == 2 && $5 == "10.77.0.12"' "$WORK/master/starts" | wc -l)" = 2
finish_job master
check "losing the master's host: the job finishes on the survivors" test "$rc" = 0
check "the restart line names the lost host" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; host lost: agent dsn1:29600: .*\); hosts lost: dsn1; added: none; world size 3 -> 2 on 2 host\(s\)" "$WORK/master.err"
[ "$rc" = 0 ] || show master
start_agents 3 || not_ok "dsn1's agent restarts"
fi

# 3b. Through a width-2 tree only (DSRUN_TEST_TREE_WIDTH=2): dsn2, dsn1's child, is lost (its agent killed -9).
#     Its parent reports it (NodeLost), and the job re-forms on dsn1 and dsn3 without it alone.
if [ "${DSRUN_TEST_TREE_WIDTH:-0}" = 2 ] && section 3b; then
elastic child wait --min_elastic_nodes 2 --max_elastic_nodes 3
wait_for 30 at_least "$WORK/child/starts" 3 || not_ok "child: the first world's ranks start"
kill_agent 2
wait_for 30 at_least "$WORK/child/starts" 5 || not_ok "child: the second world's ranks start"
check "the re-formed world has 2 ranks, on dsn1 and dsn3" \
  test "$(awk 'NR > 3 && $2 == 2 {print $6}' "$WORK/child/starts" | sort | tr '\n' ' ')" = "dsn1 dsn3 "
finish_job child
check "losing a tree child: the job finishes on the survivors" test "$rc" = 0
check "the restart line names dsn2, reported by its parent dsn1, as the only host lost" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; host lost: agent dsn2 \(via dsn1\): .*\); hosts lost: dsn2; added: none; world size 3 -> 2 on 2 host\(s\)" "$WORK/child.err"
[ "$rc" = 0 ] || show child
start_agents 3 || not_ok "dsn2's agent restarts"
fi

# 4. A host goes silent (its link down: no reset): noticed within the heartbeat budget (5 beats of
#    500 ms by default), the job re-forms without it.
if section 4; then
elastic silent wait --min_elastic_nodes 2 --max_elastic_nodes 3
wait_for 30 at_least "$WORK/silent/starts" 3 || not_ok "silent: the first world's ranks start"
t0=$(date +%s.%N)
ip link set vdsn3 down
wait_for 30 at_least "$WORK/silent/starts" 5 || not_ok "silent: the second world's ranks start"
echo "# silent host: second world started $(echo "$(date +%s.%N) - $t0" | bc) s after the link went down"
check "the restart line says dsn3 went silent, with the 2500 ms budget" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; host lost: agent dsn3:29600: host dsn3 silent for [0-9]+ ms \(heartbeat budget 2500 ms" "$WORK/silent.err"
finish_job silent
check "a silent host: the job finishes on the other two" test "$rc" = 0
ip link set vdsn3 up
[ "$rc" = 0 ] || show silent
fi

# 5. Scale-up: three agents, four candidates; the fourth agent starts mid-run and the job grows to it at
#    once, without using a failure restart.
if section 5; then
elastic grow wait --min_elastic_nodes 2
wait_for 30 at_least "$WORK/grow/starts" 3 || not_ok "grow: the first world's ranks start"
start_agents 4 || not_ok "dsn4's agent starts"
wait_for 30 at_least "$WORK/grow/starts" 7 || not_ok "grow: the 4-rank world starts"
check "the grown world has 4 ranks, restart count still 0" \
  test "$(awk 'NR > 3 && $2 == 4 && $3 == 0' "$WORK/grow/starts" | wc -l)" = 4
finish_job grow
check "scale-up: the job finishes" test "$rc" = 0
check "the scale-up line names the added host" \
  grep -qE "^dsrun: elastic scale-up \(restarts used 0/100; more agents answer\); hosts lost: none; added: dsn4; world size 3 -> 4 on 4 host\(s\)" "$WORK/grow.err"
[ "$rc" = 0 ] || show grow
fi

# 5b. A partial partition (dsn2 has no route to dsn3; both reach the launcher): the mesh probe before the
#     first world names the pair, nothing starts there, and the job re-forms without dsn3 (the later host of
#     the broken pair) on dsn1, dsn2, dsn4, then succeeds; it is not counted as a restart of the ranks.
if section 5b; then
ip -n dsn2 route add unreachable 10.77.0.13/32
elastic partition wait --min_elastic_nodes 2 --max_elastic_nodes 3
wait_for 30 at_least "$WORK/partition/starts" 3 || not_ok "partition: the ranks of the re-formed world start"
ip -n dsn2 route del unreachable 10.77.0.13/32
finish_job partition
check "a partitioned pair: the job runs without dsn3 and succeeds" test "$rc" = 0
check "one world of 3 ranks ran, none on dsn3, restart count 0" \
  test "$(awk '$2 == 3 && $3 == 0 && $6 != "dsn3"' "$WORK/partition/starts" | wc -l)-$(lines "$WORK/partition/starts")" = 3-3
check "the restart line names the broken pair and the host left out" \
  grep -qE "^dsrun: elastic restart \(restarts used 0/100; network partition: dsn2 cannot reach dsn3:29600: No route to host.*; left out: dsn3\); hosts lost: dsn3; added: dsn4; world size 3 -> 3 on 3 host\(s\)" "$WORK/partition.err"
check "the summary counts a network partition" grep -q "^dsrun: elastic summary: 1 restart(s) (1 network partition)" "$WORK/partition.err"
[ "$rc" = 0 ] || show partition
fi

# 6. Below the minimum: waits --elastic_timeout_s, then fails naming the missing hosts.
if section 6; then
kill_agent 2; kill_agent 3; kill_agent 4
elastic few wait --min_elastic_nodes 2 --elastic_timeout_s 2
wait_for 60 sh -c "! kill -0 $dpid 2>/dev/null"; wait "$dpid"; rc=$?
check "below the minimum: exit 1 after the wait" test "$rc" = 1
check "the error names the hosts that did not answer" \
  grep -q "fewer than --min_elastic_nodes 2 hosts usable after waiting .* unavailable: dsn2 (agent not answering), dsn3 (agent not answering), dsn4 (agent not answering)" "$WORK/few.err"
check "nothing was started" test ! -e "$WORK/few/starts"
start_agents 4 || not_ok "agents restart"
fi

# 7. Ctrl-C: exit 130, every rank everywhere stopped.
if section 7; then
elastic intr wait --min_elastic_nodes 2
wait_for 30 at_least "$WORK/intr/starts" 4 || not_ok "intr: the ranks start"
kill -INT "$dpid"
wait_for 30 sh -c "! kill -0 $dpid 2>/dev/null" || { not_ok "intr: dsrun ended after Ctrl-C"; kill -9 "$dpid"; }
wait "$dpid"; rc=$?
check "Ctrl-C ends an elastic job with 130" test "$rc" = 130
fi

# 8. No process of any of these jobs is left on any host (one filesystem, one /proc for all namespaces).
for tag in count budget twin1 twin2 master child silent grow partition intr; do
  [ -d "$WORK/$tag" ] || continue  # its section did not run
  id=$(job_of "$tag")
  wait_for 10 test "$(job_procs "$id")" = 0
  check "nothing of job '$tag' ($id) is left running" test -n "$id" -a "$(job_procs "$id")" = 0
done

finish
