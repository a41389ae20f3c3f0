#!/usr/bin/env bash
# Real dsrun-agent processes on loopback addresses (127.0.0.1, 127.0.0.2, 127.0.0.4), each with its own
# node certificate, and `dsrun --launcher agent`: launch, output tagging, cross-node failure, unreachable,
# untrusted and misnamed agents, signals, a killed agent, revoked certificates.
# usage: agent_loopback.sh DSRUN DSRUN_AGENT
set -u
DSRUN=${1:?usage: agent_loopback.sh DSRUN DSRUN_AGENT}
AGENT=${2:?usage: agent_loopback.sh DSRUN DSRUN_AGENT}
DSRUN=$(readlink -f "$DSRUN")
AGENT=$(readlink -f "$AGENT")
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
tmp=$(mktemp -d)
DSRUN=$(with_test_tree "$DSRUN" "$tmp")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# Processes whose environment carries this job id (the way dsrun's tests find leftovers, no pkill -f).
# The job id dsrun chose, as its ranks saw it (they write it to $tmp/jobid-<tag>).
job_id_of() {
  for _ in $(seq 200); do [ -s "$tmp/jobid-$1" ] && { cat "$tmp/jobid-$1"; return; }; sleep 0.05; done
  echo "no-job-id-written"
}

port=$((29700 + RANDOM % 250))
"$DSRUN" --make_tls "$tmp/tls" >/dev/null || { echo "not ok - dsrun --make_tls failed"; exit 1; }
check "--make_tls makes key files 0600" test "$(stat -c %a "$tmp/tls/key.pem")$(stat -c %a "$tmp/tls/ca.key")" = 600600
for a in 127.0.0.1 127.0.0.2; do
  "$DSRUN" --make_node_cert "$tmp/tls" --host "$a" --out "$tmp/node-$a" >/dev/null ||
    { echo "not ok - dsrun --make_node_cert --host $a failed"; exit 1; }
done
check "a node directory holds no CA key" test ! -e "$tmp/node-127.0.0.1/ca.key"
check "a node directory holds the CA's revocation list" cmp -s "$tmp/tls/crl.pem" "$tmp/node-127.0.0.1/crl.pem"

start_agent() {  # start_agent ADDR [NODE_TLS_DIR]
  "$AGENT" --listen "$1:$port" --tls_dir "${2:-$tmp/node-$1}" --kill_grace_s 2 --heartbeat_timeout_s 3 \
    >"$tmp/agent-$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$tmp/agent-$1.log" && return 0; sleep 0.05; done
  echo "not ok - agent on $1:$port did not start:"; cat "$tmp/agent-$1.log"; exit 1
}
start_agent 127.0.0.1
start_agent 127.0.0.2
agent2_pid=${pids[1]}

printf '127.0.0.1 slots=2\n127.0.0.2 slots=2\n' >"$tmp/hostfile"
run_dsrun() {  # run_dsrun JOBID ARGS... (stdout/stderr to $tmp/out, $tmp/err; rc in $rc)
  local id=$1; shift
  DSRUN_JOB_ID=$id "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/tls" -H "$tmp/hostfile" \
    --master_addr 127.0.0.1 "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

# 1. Launch 2 hosts x 2 ranks with tagged output.
cat >"$tmp/rank.sh" <<'EOS'
#!/bin/sh
echo "rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE cwd=$(pwd) arg=$1"
EOS
chmod +x "$tmp/rank.sh"
cd "$tmp" || exit 1
run_dsrun agent-it-1 --tag_output --no_python --no_local_rank "$tmp/rank.sh" 'a b$c'
cd - >/dev/null || exit 1
check "a 2x2 job exits 0" test "$rc" = 0
check "every rank printed once, tagged host:rank" test "$(grep -c ' | rank=' "$tmp/out")" = 4
check "rank 3 ran on 127.0.0.2 as local rank 1 with argv intact" \
  grep -qxF "127.0.0.2:3 | rank=3 local=1 world=4 cwd=$tmp arg=a b\$c" "$tmp/out"

# 2. One failing rank anywhere stops every rank everywhere and decides the exit code.
cat >"$tmp/fail.sh" <<EOS
#!/bin/sh
echo \$DSRUN_JOB_ID > $tmp/jobid-fail
[ "\$RANK" = 3 ] && { sleep 0.3; echo "rank 3 gives up" >&2; exit 7; }
exec sleep 30
EOS
chmod +x "$tmp/fail.sh"
run_dsrun agent-it-2 --no_python --no_local_rank "$tmp/fail.sh"
check "dsrun exits with the failing rank's code" test "$rc" = 7
check "the failure line names host, rank, pid and cause" \
  grep -qE "dsrun: rank 3 \(127\.0\.0\.2 pid [0-9]+\) exited with code 7; terminated 3 other ranks" "$tmp/err"
check "the last lines are the root-cause block, quoting the rank's stderr" \
  sh -c "tail -n 8 '$tmp/err' | grep -qx 'dsrun:   host     : 127.0.0.2' && tail -n 3 '$tmp/err' | grep -qx 'dsrun:     rank 3 gives up'"
sleep 0.2
check "no process of the failed job is left" test "$(job_procs "$(job_id_of fail)")" = 0

# 2b. The program is missing on every host: the agents cannot start it and dsrun ends at once with their line
# (the ranks never started report no exit; killed after 60 s if dsrun waited for them).
DSRUN_JOB_ID=agent-it-2b timeout -s KILL 60 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/tls" \
  -H "$tmp/hostfile" --master_addr 127.0.0.1 --no_python "$tmp/no-such-program" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "a program missing on every host fails the job with 1, without a wait" test "$rc" = 1
check "the agent's line names the program" grep -q "spawn '$tmp/no-such-program': No such file or directory" "$tmp/err"

# 3. An unreachable agent: nothing starts anywhere.
printf '127.0.0.1 slots=1\n127.0.0.3 slots=1\n' >"$tmp/hostfile3"
DSRUN_JOB_ID=agent-it-3 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/tls" -H "$tmp/hostfile3" \
  --master_addr 127.0.0.1 --no_python --no_local_rank /bin/sh -c "touch $tmp/started-\$RANK" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "an unreachable agent fails the launch" test "$rc" != 0
check "it is named by host:port with the reason" grep -q "agent 127.0.0.3:$port: connect: Connection refused" "$tmp/err"
check "nothing was started on the reachable host" test ! -e "$tmp/started-0"

# 4. A launcher with a certificate from another CA is refused by the agents.
"$DSRUN" --make_tls "$tmp/rogue" >/dev/null
DSRUN_JOB_ID=agent-it-4 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/rogue" -H "$tmp/hostfile" \
  --master_addr 127.0.0.1 --no_python --no_local_rank /bin/sh -c "touch $tmp/rogue-\$RANK" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "a launcher from another CA is refused" test "$rc" != 0
check "nothing ran for it" test ! -e "$tmp/rogue-0"
# The agent logs its side of the failed handshake on its own loop, possibly after dsrun has exited: wait for it.
check "the agent logged the refusal with the peer address" \
  wait_for 10 grep -q "127.0.0.1:[0-9]*: refused: TLS handshake failed" "$tmp/agent-127.0.0.1.log"

# 5. SIGTERM to dsrun leaves no process of the job on any node.
DSRUN_JOB_ID=agent-it-5 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/tls" -H "$tmp/hostfile" \
  --master_addr 127.0.0.1 --no_python --no_local_rank /bin/sh -c "echo \$DSRUN_JOB_ID > $tmp/jobid-5; exec sleep 30" \
  >"$tmp/out" 2>"$tmp/err" &
dpid=$!
id5=$(job_id_of 5)
for _ in $(seq 100); do [ "$(job_procs "$id5")" -ge 4 ] && break; sleep 0.05; done
kill -TERM $dpid
wait $dpid
rc=$?
check "dsrun exits 128+15 after SIGTERM" test "$rc" = 143
sleep 0.2
check "no process of the signalled job is left" test "$(job_procs "$id5")" = 0

# 6. kill -9 of an agent mid-job: dsrun names it and stops the other node's ranks.
DSRUN_JOB_ID=agent-it-6 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/tls" -H "$tmp/hostfile" \
  --master_addr 127.0.0.1 --no_python --no_local_rank /bin/sh -c "echo \$DSRUN_JOB_ID > $tmp/jobid-6; exec sleep 30" \
  >"$tmp/out" 2>"$tmp/err" &
dpid=$!
id6=$(job_id_of 6)
six_running() { [ "$(job_procs "$id6")" -ge 4 ]; }
wait_for 30 six_running || true  # a guard: the checks below say what is missing
# The ranks' pids as the kernel has them (each rank execs sleep in place): the ones dsrun names must be these,
# learnt from the agents' start events (merged into RanksStarted through a tree, DSRUN_TEST_TREE_WIDTH).
rank_pids6=$(grep -l "DSRUN_JOB_ID=$id6" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | sort -n)
kill -KILL "$agent2_pid"
wait $dpid
rc=$?
check "dsrun fails when an agent dies" test "$rc" != 0
check "it names the lost agent" grep -q "agent 127.0.0.2:$port: " "$tmp/err"
named6=$(grep -oE "\(127\.0\.0\.2 pid [0-9]+\)" "$tmp/err" | grep -oE "[0-9]+\)$" | tr -d ')' | sort -un)
# Subset, not equality: a rank whose start event had not reached dsrun when its agent died is named "pid -1".
check "the pids it names for the lost host's ranks are theirs (the agents' start events)" \
  test -z "$(comm -23 <(echo "$named6") <(echo "$rank_pids6"))"
sleep 0.3
check "no process of that job is left on either node" test "$(job_procs "$id6")" = 0

# 7. An agent whose certificate names another host is refused by dsrun (here 127.0.0.2's, on 127.0.0.4).
start_agent 127.0.0.4 "$tmp/node-127.0.0.2"
printf '127.0.0.4 slots=1\n' >"$tmp/hostfile4"
DSRUN_JOB_ID=agent-it-7 "$DSRUN" --launcher agent --force_multi --agent_port "$port" --tls_dir "$tmp/tls" \
  -H "$tmp/hostfile4" --master_addr 127.0.0.4 --no_python --no_local_rank /bin/sh -c "touch $tmp/misnamed-\$RANK" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "an agent with another host's certificate is refused" test "$rc" != 0
check "the error names the dialled agent, the mismatch and the certificate it presented" \
  grep -q "agent 127.0.0.4:$port: TLS handshake: certificate verify failed: IP address mismatch (the peer presented CN=dsrun node 127.0.0.2" "$tmp/err"
check "nothing ran on the misnamed agent" test ! -e "$tmp/misnamed-0"

# 8. Revocation. The launcher's own certificate, once the new crl.pem is copied to the node: the running
#    agent reloads it at the next connection and refuses dsrun.
printf '127.0.0.1 slots=1\n' >"$tmp/hostfile1"
run_one() {  # run_one JOBID: a 1-rank job on 127.0.0.1 through its agent (rc in $rc)
  DSRUN_JOB_ID=$1 "$DSRUN" --launcher agent --force_multi --agent_port "$port" --tls_dir "$tmp/tls" -H "$tmp/hostfile1" \
    --master_addr 127.0.0.1 --no_python --no_local_rank /bin/sh -c "touch $tmp/$1-\$RANK" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
run_one agent-it-8a
check "before any revocation the job runs" test "$rc" = 0 -a -e "$tmp/agent-it-8a-0"
"$DSRUN" --revoke_cert "$tmp/tls" --cert "$tmp/tls/cert.pem" >"$tmp/revoke.out"
check "--revoke_cert names the certificate it revoked" grep -q "revoked CN=dsrun launcher" "$tmp/revoke.out"
cp "$tmp/tls/crl.pem" "$tmp/node-127.0.0.1/crl.new" && mv "$tmp/node-127.0.0.1/crl.new" "$tmp/node-127.0.0.1/crl.pem"
run_one agent-it-8b
check "a revoked launcher certificate is refused by the agent" test "$rc" != 0 -a ! -e "$tmp/agent-it-8b-0"
logged() {  # logged PATTERN FILE: the agent may write its line just after dsrun has exited
  for _ in $(seq 50); do grep -q "$1" "$2" && return 0; sleep 0.1; done; return 1
}
check "the agent logged why" logged "refused: TLS handshake failed: certificate verify failed: certificate revoked" \
  "$tmp/agent-127.0.0.1.log"
"$DSRUN" --renew_launcher_cert "$tmp/tls" >/dev/null
cp "$tmp/tls/crl.pem" "$tmp/node-127.0.0.1/crl.new" && mv "$tmp/node-127.0.0.1/crl.new" "$tmp/node-127.0.0.1/crl.pem"
run_one agent-it-8c
check "a renewed launcher certificate is accepted by the same agent, node certificates unchanged" \
  test "$rc" = 0 -a -e "$tmp/agent-it-8c-0"
# A node's certificate: dsrun reads the CA's crl.pem itself, no copy needed.
"$DSRUN" --revoke_cert "$tmp/tls" --cert "$tmp/node-127.0.0.1/cert.pem" >/dev/null
run_one agent-it-8d
check "a revoked node certificate is refused by dsrun" test "$rc" != 0 -a ! -e "$tmp/agent-it-8d-0"
check "the error says the agent's certificate is revoked" \
  grep -q "agent 127.0.0.1:$port: TLS handshake: certificate verify failed: certificate revoked (the peer presented CN=dsrun node 127.0.0.1" "$tmp/err"

if [ "$failures" -ne 0 ]; then
  echo "# $failures check(s) failed; dsrun stderr:"; cat "$tmp/err"
  echo "# agent logs:"; tail -n 20 "$tmp"/agent-*.log
  exit 1
fi
echo "# all agent loopback checks passed"
