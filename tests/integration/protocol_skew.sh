#!/bin/bash
# Version skew: dsrun meets an agent one protocol version older (tests/integration/old_agent.py
# answers a real dsrun's Hello as such an agent would) and refuses it with one error naming the host and both
# versions before anything starts, both when the agent refuses (Error) and when it welcomes with its version.
# An agent of this version from before the tree launch is refused as a --tree_width root, naming it; tree agents
# from before the mesh probe in a tree get their launch without it.
# The agent's side (an older client refused with both versions) is agent_server_test's.
#   protocol_skew.sh DSRUN [PYTHON]
set -u
DSRUN=$(readlink -f "${1:?usage: protocol_skew.sh DSRUN [PYTHON]}")
PY=${2:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
t=$(mktemp -d /tmp/dsrun-skew.XXXXXX)
fake=""
cleanup() { [ -n "$fake" ] && kill "$fake" 2>/dev/null; rm -rf "$t"; }
trap cleanup EXIT
"$DSRUN" --make_tls "$t/tls" >/dev/null && "$DSRUN" --make_node_cert "$t/tls" --host 127.0.0.1 --out "$t/node" >/dev/null ||
  { not_ok "dsrun --make_tls / --make_node_cert"; finish; }
printf '127.0.0.1 slots=1\n' > "$t/hostfile"
for mode in error welcome; do
  port=$((30900 + RANDOM % 90))
  "$PY" "$HERE/old_agent.py" "$t/node" "$port" "$mode" > "$t/fake.out" 2>&1 &
  fake=$!
  wait_for 10 grep -q listening "$t/fake.out" || { not_ok "$mode: the stand-in agent listens"; cat "$t/fake.out"; continue; }
  timeout 60 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$t/tls" -H "$t/hostfile" --force_multi \
    --master_addr 127.0.0.1 --no_python --no_local_rank /bin/touch "$t/ran-$mode" >"$t/$mode.out" 2>"$t/$mode.err"
  rc=$?
  kill "$fake"; wait "$fake" 2>/dev/null; fake=""
  errors=$(grep -c '^dsrun' "$t/$mode.err")
  if [ "$rc" != 0 ] && [ ! -e "$t/ran-$mode" ] && [ "$errors" = 1 ] &&
     grep -q "^dsrun: cannot start the job, nothing was started: agent 127.0.0.1:$port: .*protocol version mismatch: .*speaks version [0-9]*, this .* speaks version [0-9]*" "$t/$mode.err" &&
     grep -q "hint: run the same dsrun release on every host" "$t/$mode.err" && ! grep -qi "reset\|warn" "$t/$mode.err"; then
    ok "$mode: an agent one protocol version older is refused in one error naming 127.0.0.1:$port and both versions (exit $rc); nothing ran"
  else
    not_ok "$mode: an older agent is refused naming the host and both versions (rc $rc)"; sed 's/^/#   | /' "$t/$mode.err"
  fi
done
# An agent of this protocol version that predates the tree launch (Welcome.tree_launch unset) cannot be a
# tree's root: refused in one error naming it, before anything starts.
port=$((30900 + RANDOM % 90))
"$PY" "$HERE/old_agent.py" "$t/node" "$port" pretree > "$t/fake.out" 2>&1 &
fake=$!
if wait_for 10 grep -q listening "$t/fake.out"; then
  timeout 60 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$t/tls" -H "$t/hostfile" --force_multi \
    --tree_width 2 --master_addr 127.0.0.1 --no_python --no_local_rank /bin/touch "$t/ran-pretree" >"$t/pretree.out" 2>"$t/pretree.err"
  rc=$?
  if [ "$rc" = 2 ] && [ ! -e "$t/ran-pretree" ] &&
     grep -q "^dsrun: --tree_width 2: the agent 127.0.0.1:$port cannot forward a tree launch (an older dsrun-agent); nothing was started" "$t/pretree.err" &&
     grep -q "hint: run the same dsrun release on every host, or drop --tree_width" "$t/pretree.err"; then
    ok "pretree: a root agent without the tree launch is refused in one error naming 127.0.0.1:$port (exit 2); nothing ran"
  else
    not_ok "pretree: a root agent without the tree launch is refused naming it (rc $rc)"; sed 's/^/#   | /' "$t/pretree.err"
  fi
else
  not_ok "pretree: the stand-in agent listens"; cat "$t/fake.out"
fi
kill "$fake"; wait "$fake" 2>/dev/null; fake=""
# Tree agents from before the mesh probe in a tree (Welcome.tree_launch set, tree_probe unset) on two hosts: dsrun
# does not ask them to hold and probe (they would start at once), says so, and sends each its plain launch.
"$DSRUN" --make_node_cert "$t/tls" --host 127.0.0.2 --out "$t/node2" >/dev/null || not_ok "dsrun --make_node_cert 127.0.0.2"
printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n' > "$t/hostfile2"
port=$((30900 + RANDOM % 90))
"$PY" "$HERE/old_agent.py" "$t/node" "$port" preprobe 127.0.0.1 > "$t/fake1.out" 2>&1 &
fake=$!
"$PY" "$HERE/old_agent.py" "$t/node2" "$port" preprobe 127.0.0.2 > "$t/fake2.out" 2>&1 &
fake2=$!
if wait_for 10 grep -q listening "$t/fake1.out" && wait_for 10 grep -q listening "$t/fake2.out"; then
  timeout 60 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$t/tls" -H "$t/hostfile2" --tree_width 2 \
    --master_addr 127.0.0.1 --no_python --no_local_rank /bin/true >"$t/preprobe.out" 2>"$t/preprobe.err"
  check "preprobe: each older tree root got its launch without the probe (it would start at once)" \
    sh -c "grep -qx 'tree launch probe=no' $t/fake1.out && grep -qx 'tree launch probe=no' $t/fake2.out"
  check "preprobe: dsrun says both subtrees are only probed" \
    test "$(grep -c "agent predates the tree probe; its subtree of 1 host(s) is only probed" "$t/preprobe.err")" = 2
else
  not_ok "preprobe: the stand-in agents listen"; cat "$t/fake1.out" "$t/fake2.out"
fi
kill "$fake" "$fake2"; wait "$fake" "$fake2" 2>/dev/null; fake=""
finish
