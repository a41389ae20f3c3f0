#!/usr/bin/env bash
# Elastic training on the ssh backend (docs/elastic.md), on the network-namespace cluster
# (scripts/test_cluster.sh: real sshd on dsn1..dsn4): the restart counter, the restart budget, a host whose
# ssh session is killed (connection closed), dsrun-launch killed, a silent host (its link down: no reset),
# scale-up when a host becomes reachable, Ctrl-C, and no process of any job left anywhere. The ranks are shell programs (elastic_rank.sh). Needs root. Sharness style.
# usage: elastic_ssh.sh DSRUN
set -u
DSRUN=$(readlink -f "${1:?usage: elastic_ssh.sh DSRUN}")
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=elastic_lib.sh
. "$HERE/elastic_lib.sh"
CLUSTER=$ROOT/scripts/test_cluster.sh RANKPROG=$HERE/elastic_rank.sh
export DSRUN_CLUSTER_STATE=${DSRUN_CLUSTER_STATE:-/run/dsrun-cluster}
ST=$DSRUN_CLUSTER_STATE
require_root "the elastic ssh test suite"
WORK=$(mktemp -d /tmp/dsrun-elastic-ssh.XXXXXX); chmod 755 "$WORK"
cleanup() { ip link set vdsn3 up 2>/dev/null; ip link set vdsn4 up 2>/dev/null; "$CLUSTER" down 4 >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT

# One retry from scratch: on a loaded machine an sshd has been seen to die during bring-up.
if ! "$CLUSTER" up 4 >"$WORK/up.log" 2>&1 && ! { "$CLUSTER" down 4 >/dev/null 2>&1; "$CLUSTER" up 4 >"$WORK/up.log" 2>&1; }; then
  not_ok "test cluster comes up"; tail -3 "$WORK/up.log"; exit 1
fi
printf 'dsn1 slots=1\ndsn2 slots=1\ndsn3 slots=1\n' >"$WORK/three"
printf 'dsn1 slots=1\ndsn2 slots=1\ndsn3 slots=1\ndsn4 slots=1\n' >"$WORK/four"
# elastic TAG HOSTFILE MODE [dsrun flags...]: runs an elastic job in the background ($dpid); its rank log
# is $WORK/TAG/starts, its output $WORK/TAG.out/.err.
elastic() {
  local tag=$1 hostfile=$2 mode=$3; shift 3
  mkdir -p "$WORK/$tag"; chmod 777 "$WORK/$tag"
  env --default-signal "$DSRUN" --launcher ssh --ssh_config "$ST/ssh_config" -H "$WORK/$hostfile" \
    --elastic_training --master_addr 10.77.0.11 --kill_grace_s 2 --no_python "$@" "$RANKPROG" "$WORK/$tag" "$mode" \
    >"$WORK/$tag.out" 2>"$WORK/$tag.err" &
  dpid=$!
}
# The sshd process serving job ID's dsrun-launch on host HOST (the nearest sshd above it).
sshd_of() {
  local id=$1 host=$2 pid comm
  for pid in $(ip netns pids "$host"); do
    [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dsrun-launch ] || continue
    tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | grep -q -- "--job_id=$id" || continue
    while pid=$(awk '{print $4}' /proc/"$pid"/stat 2>/dev/null) && [ "$pid" -gt 1 ]; do
      comm=$(cat /proc/"$pid"/comm 2>/dev/null)
      case $comm in sshd|sshd-session|sshd-auth) echo "$pid"; return 0 ;; esac
    done
  done
  return 1
}

# a. Rank 1 fails only in the first world: one failure restart, every rank of the second world saw
#    DSRUN_RESTART_COUNT=1 (and torchrun's name), the job succeeds.
elastic count three fail_first --min_elastic_nodes 2
wait_for 90 sh -c "! kill -0 $dpid 2>/dev/null"; wait "$dpid"; rc=$?
check "a rank failing once: the job restarts and succeeds" test "$rc" = 0
check "the second world's 3 ranks all saw restart count 1 under both names" \
  test "$(awk '$3 == 1 && $4 == 1' "$WORK/count/starts" | wc -l)" = 3
check "GROUP_RANK and LOCAL_WORLD_SIZE reach the ranks over ssh" \
  test "$(awk '$3 == 1 && $7 == $1 && $8 == 1' "$WORK/count/starts" | wc -l)" = 3
check "ROLE_RANK equals RANK on every rank over ssh" \
  test "$(awk '$10 == $1' "$WORK/count/starts" | wc -l)" = "$(wc -l <"$WORK/count/starts")"
check "one restart line names the failed rank and the world" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; rank failure: rank 1 on dsn2 \(pid [0-9]+\) exited with code 3\); hosts lost: none; added: none; world size 3 -> 3 on 3 host\(s\); ranks running [0-9.]+ s after detection$" "$WORK/count.err"
check "the summary counts it" grep -q "^dsrun: elastic summary: 1 restart(s) (1 rank failure)" "$WORK/count.err"
[ "$rc" = 0 ] || show count

# b. A rank that always fails exhausts --max_restarts; dsrun exits with that rank's code.
elastic budget three always_fail --min_elastic_nodes 2 --max_restarts 3
wait_for 120 sh -c "! kill -0 $dpid 2>/dev/null"; wait "$dpid"; rc=$?
check "a rank failing every time: exit 7 once the budget is spent" test "$rc" = 7
# Counted by job id: a rank whose host's login is slow may not have started before rank 1 failed.
check "4 worlds ran (the first and 3 restarts)" test "$(awk '{print $9}' "$WORK/budget/starts" | sort -u | wc -l)" = 4
check "the last line says the budget is spent" \
  grep -qE "^dsrun: rank 1 on dsn[0-9] \(pid [0-9]+\) exited with code 7; no restart left \(--max_restarts 3 used\)$" "$WORK/budget.err"
check "the summary counts the 3 restarts that happened, not the failure that ended the job" \
  grep -q "^dsrun: elastic summary: 3 restart(s) (3 rank failure)" "$WORK/budget.err"
[ "$rc" = 7 ] || show budget

# c. A host lost: the sshd session serving dsn2 is killed (the connection closes under the job). The job
#    re-forms on dsn1, dsn3 and the spare dsn4, and finishes.
elastic lost four wait --min_elastic_nodes 2 --max_elastic_nodes 3
wait_for 60 at_least "$WORK/lost/starts" 3 || not_ok "lost: the first world's ranks start"
id=$(job_of lost); victim=$(sshd_of "$id" dsn2)
check "lost: found the sshd session of the job on dsn2" test -n "$victim"
[ -n "$victim" ] && kill -9 "$victim"
wait_for 60 at_least "$WORK/lost/starts" 6 || not_ok "lost: the second world's ranks start"
check "the re-formed world runs on dsn1, dsn3, dsn4 with restart count 1" \
  test "$(awk 'NR > 3 && $3 == 1 {print $6}' "$WORK/lost/starts" | sort | tr '\n' ' ')" = "dsn1 dsn3 dsn4 "
finish_job lost
check "a lost host: the job finishes on the others" test "$rc" = 0
check "the restart line says dsn2's connection was lost" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; host lost: ssh dsn2:[0-9]+: connection to dsn2 lost \(.*\)\); hosts lost: dsn2; added: dsn4; world size 3 -> 3 on 3 host\(s\)" "$WORK/lost.err"
[ "$rc" = 0 ] || show lost

# d. A host goes silent (its link down: no reset): noticed within the heartbeat budget (5 x 500 ms of
#    unacknowledged beats, TCP_USER_TIMEOUT), the job re-forms without it; dsn3's dsrun-launch stops its
#    ranks when the beats stop arriving.
elastic silent four wait --min_elastic_nodes 2 --max_elastic_nodes 3
wait_for 60 at_least "$WORK/silent/starts" 3 || not_ok "silent: the first world's ranks start"
t0=$(date +%s.%N)
ip link set vdsn3 down
wait_for 60 at_least "$WORK/silent/starts" 6 || not_ok "silent: the second world's ranks start"
echo "# silent host: second world started $(echo "$(date +%s.%N) - $t0" | bc) s after the link went down"
grep "^dsrun: elastic restart" "$WORK/silent.err" | sed 's/^/# /'
grep "dsrun-launch: dsn3: nothing from dsrun" "$WORK/silent.err" | sed 's/^/# /' # arrives once the link is back
check "the restart line says dsn3 went silent, with the 2500 ms budget" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; host lost: ssh dsn3:[0-9]+: host dsn3 silent \(our heartbeats unacknowledged; heartbeat budget 2500 ms = 5 x 500 ms\)\); hosts lost: dsn3; added: dsn4; world size 3 -> 3 on 3 host\(s\)" "$WORK/silent.err"
silent_id=$(job_of silent)
check "dsn3 ran a rank of the first world" test "$(awk 'NR <= 3 && $6 == "dsn3"' "$WORK/silent/starts" | wc -l)" = 1
check "the silent host's ranks stopped on their own (no heartbeat for 2500 ms), its link still down" \
  wait_for 10 sh -c "[ \$(grep -l 'DSRUN_JOB_ID=$silent_id\$' /proc/[0-9]*/environ 2>/dev/null | wc -l) = 0 ]"
finish_job silent
check "a silent host: the job finishes on the other three" test "$rc" = 0
ip link set vdsn3 up
[ "$rc" = 0 ] || show silent

# c2. dsrun-launch itself killed -9 on dsn2 (its ranks die with it, PDEATHSIG): no exit status comes back,
#     the host counts as lost and the job re-forms.
elastic killed four wait --min_elastic_nodes 2 --max_elastic_nodes 3
wait_for 60 at_least "$WORK/killed/starts" 3 || not_ok "killed: the first world's ranks start"
id=$(job_of killed)
for pid in $(ip netns pids dsn2); do
  [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dsrun-launch ] && tr '\0' ' ' </proc/"$pid"/cmdline | grep -q -- "--job_id=$id" &&
    kill -9 "$pid"
done
wait_for 60 at_least "$WORK/killed/starts" 6 || not_ok "killed: the second world's ranks start"
finish_job killed
check "dsrun-launch killed: the job finishes on the others" test "$rc" = 0
check "the restart line says dsn2 was lost" \
  grep -qE "^dsrun: elastic restart \(restarts used 1/100; host lost: ssh dsn2:[0-9]+: dsrun-launch on dsn2 ended without an exit status \(killed, or its sshd was\)\); hosts lost: dsn2; added: dsn4" "$WORK/killed.err"
[ "$rc" = 0 ] || show killed

# g. Scale-up: dsn4 unreachable at the start (its link down), the job runs on three; its link comes back and
#    the spare watcher's ssh login succeeds: the job grows to four without using a failure restart.
ip link set vdsn4 down
elastic grow four wait --min_elastic_nodes 2
wait_for 60 at_least "$WORK/grow/starts" 3 || not_ok "grow: the first world's ranks start"
ip link set vdsn4 up
wait_for 60 at_least "$WORK/grow/starts" 7 || not_ok "grow: the 4-rank world starts"
check "the grown world has 4 ranks, restart count still 0" \
  test "$(awk 'NR > 3 && $2 == 4 && $3 == 0' "$WORK/grow/starts" | wc -l)" = 4
finish_job grow
check "scale-up: the job finishes" test "$rc" = 0
check "the scale-up line names the added host" \
  grep -qE "^dsrun: elastic scale-up \(restarts used 0/100; more hosts answer over ssh\); hosts lost: none; added: dsn4; world size 3 -> 4 on 4 host\(s\)" "$WORK/grow.err"
[ "$rc" = 0 ] || show grow

# f. Ctrl-C: exit 130, every rank everywhere stopped.
elastic intr three wait --min_elastic_nodes 2
wait_for 60 at_least "$WORK/intr/starts" 3 || not_ok "intr: the ranks start"
kill -INT "$dpid"
wait_for 30 sh -c "! kill -0 $dpid 2>/dev/null" || { not_ok "intr: dsrun ended after Ctrl-C"; kill -9 "$dpid"; }
wait "$dpid"; rc=$?
check "Ctrl-C ends an elastic ssh job with 130" test "$rc" = 130

# e. No process of any of these jobs is left on any host (one filesystem, one /proc for all namespaces).
for tag in count budget lost silent killed grow intr; do
  id=$(job_of "$tag")
  wait_for 15 test "$(job_procs "$id")" = 0
  check "nothing of job '$tag' ($id) is left running" test -n "$id" -a "$(job_procs "$id")" = 0
done

finish
