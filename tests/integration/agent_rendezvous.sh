#!/usr/bin/env bash
# --rendezvous agent end to end (docs/rendezvous.md): four real dsrun-agents on loopback addresses, one rank
# each, running a real torch program (rendezvous_rank.py: init_process_group("env://") with Gloo, an all_reduce
# whose sum each rank checks, destroy) whose store is served by the agents: through a width-2 tree (roots
# 127.0.0.1 and 127.0.0.3, each with one child: the second root's child goes through it, and it through the
# uplink to rank 0's agent) and through the star (every agent dials rank 0's agent), with Debian's torch 1.13
# (/usr/bin/python3) and torch 2.x (the PyPI environment of scripts/setup_torch2_env.sh, given to the ranks
# with --python). A store query the agents do not serve fails its rank at once, named in the agent's log.
# No rank is left behind. An interpreter without torch is a failure, not a skip.
# usage: agent_rendezvous.sh DSRUN DSRUN_AGENT   (env: DSRUN_TORCH2_VENV, default <repo>/.venv-torch2)
set -u
DSRUN=$(readlink -f "${1:?usage: agent_rendezvous.sh DSRUN DSRUN_AGENT}")
AGENT=$(readlink -f "${2:?usage: agent_rendezvous.sh DSRUN DSRUN_AGENT}")
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
TORCH1=/usr/bin/python3
TORCH2=${DSRUN_TORCH2_VENV:-$ROOT/.venv-torch2}/bin/python
tmp=$(mktemp -d); chmod 755 "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

hosts="127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4"
port=$((29700 + RANDOM % 250))
master_port=$((30000 + RANDOM % 250))  # what rank 0's TCPStore would use without the flag
"$DSRUN" --make_tls "$tmp/tls" >/dev/null || { not_ok "dsrun --make_tls"; finish; }
for a in $hosts; do
  "$DSRUN" --make_node_cert "$tmp/tls" --host "$a" --out "$tmp/node-$a" >/dev/null || { not_ok "node certificate for $a"; finish; }
  # Gloo on loopback addresses: its own sockets on lo (the ranks inherit the agent's environment).
  GLOO_SOCKET_IFNAME=lo "$AGENT" --listen "$a:$port" --tls_dir "$tmp/node-$a" --kill_grace_s 2 >"$tmp/agent-$a.log" 2>&1 &
  pids+=($!)
done
for a in $hosts; do
  wait_for 10 grep -q "listening on" "$tmp/agent-$a.log" || { not_ok "agent on $a:$port starts"; cat "$tmp/agent-$a.log"; finish; }
done
printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n' >"$tmp/hostfile"

# run TAG PYTHON ARGS...: one 4-rank job with --rendezvous agent; rc in $rc, the job id its ranks saw in $id.
run() {
  local tag=$1 python=$2 t0=$SECONDS; shift 2
  timeout 120 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/tls" -H "$tmp/hostfile" \
    --master_addr 127.0.0.1 --master_port "$master_port" --python "$python" --rendezvous agent "$@" >"$tmp/$tag.out" 2>"$tmp/$tag.err"
  rc=$?
  echo "# $tag: dsrun exited $rc after $((SECONDS - t0)) s"
  id=$(sed -n 's/.* job \([^ ]*\)$/\1/p' "$tmp/$tag.out" | sort -u | head -1)
  [ -n "$id" ] || id=no-rank-printed-its-job-id
}
show() { echo "# --- $1"; sed 's/^/# /' "$tmp/$1.out" "$tmp/$1.err" | tail -30; for a in $hosts; do grep -h "job $id" "$tmp/agent-$a.log" | tail -5 | sed 's/^/# /'; done; }
# all_ranks_summed TAG VERSION: each of the 4 ranks printed the right sum, and as its store the port its own
# node's agent opened for this job (not --master_port), with the flag torch's env:// handler reads.
all_ranks_summed() {
  local r p
  for r in 0 1 2 3; do
    p=$(sed -n "s/.*job $id: store for its ranks on 127\.0\.0\.1:\([0-9]*\),.*/\1/p" "$tmp/agent-127.0.0.$((r + 1)).log")
    [ -n "$p" ] && [ "$p" != "$master_port" ] || return 1
    grep -qE "rank $r/4 torch $2[^ ]* sum 10 expected 10 store 127\.0\.0\.1:$p agent_store=True job $id\$" "$tmp/$1.out" || return 1
  done
}
nothing_left() {  # the job's id as its ranks printed it: a job that printed none fails this too
  case $1 in no-rank-*) return 1 ;; esac
  for _ in $(seq 50); do [ "$(job_procs "$1")" = 0 ] && return 0; sleep 0.1; done; return 1
}
agent_said() { grep -q "job $1: store for its ranks on 127.0.0.1:[0-9]*, $2" "$tmp/agent-$3.log"; }

for leg in "1.13 $TORCH1" "2. $TORCH2"; do
  set -- $leg; version=$1 python=$2; v=${version%.}
  # Found without importing it (an import costs seconds); a torch that then fails to rendezvous fails the checks.
  if ! "$python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)" 2>/dev/null; then
    not_ok "torch $v's interpreter $python has torch.distributed (scripts/install_deps.sh sets it up)"
    continue
  fi
  run "tree$v" "$python" --tree_width 2 "$HERE/rendezvous_rank.py"
  check "torch $v, width-2 tree: the job exits 0" test "$rc" = 0
  check "torch $v, width-2 tree: every rank's all_reduce sums to 10 through its own agent's store" all_ranks_summed "tree$v" "$version"
  check "torch $v, width-2 tree: rank 0's agent holds the keys" agent_said "$id" "the root" 127.0.0.1
  check "torch $v, width-2 tree: the children ask through their tree parents" \
    sh -c "grep -q 'job $id: store .*through its tree parent' '$tmp/agent-127.0.0.2.log' && grep -q 'job $id: store .*through its tree parent' '$tmp/agent-127.0.0.4.log'"
  check "torch $v, width-2 tree: the second root asks rank 0's agent" agent_said "$id" "through the root's agent 127.0.0.1" 127.0.0.3
  check "torch $v, width-2 tree: nothing of the job is left" nothing_left "$id"
  [ "$rc" = 0 ] || show "tree$v"

  run "star$v" "$python" "$HERE/rendezvous_rank.py"
  check "torch $v, star: the job exits 0" test "$rc" = 0
  check "torch $v, star: every rank's all_reduce sums to 10 through its own agent's store" all_ranks_summed "star$v" "$version"
  check "torch $v, star: every other agent asks rank 0's agent" \
    sh -c "for a in 127.0.0.2 127.0.0.3 127.0.0.4; do grep -q 'job $id: store .*through the root.s agent 127.0.0.1' $tmp/agent-\$a.log || exit 1; done"
  check "torch $v, star: nothing of the job is left" nothing_left "$id"
  [ "$rc" = 0 ] || show "star$v"
done

# A query the agents do not serve (torch 2.x's queue_len): the rank's torch raises at once, the agent names it.
if [ -x "$TORCH2" ]; then
  # Two hosts: a hostfile of one local host is launched by the local backend, without agents.
  printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n' >"$tmp/two"
  timeout 60 "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/tls" -H "$tmp/two" \
    --master_addr 127.0.0.1 --python "$TORCH2" --rendezvous agent "$HERE/rendezvous_unserved.py" >"$tmp/unserved.out" 2>"$tmp/unserved.err"
  rc=$?
  id=$(sed -n 's/.* job \([^ ]*\)$/\1/p' "$tmp/unserved.out" | head -1)
  check "an unserved store query fails its rank at once (exit 4, not a hang)" test "$rc" = 4
  check "the rank saw its store connection end" grep -q "queue_len failed: .* job $id" "$tmp/unserved.out"
  check "the agent's log names the query it does not serve" \
    grep -qE "job $id store 127\.0\.0\.1:[0-9]+ \(client port [0-9]+\): store query [0-9]+ not served \(torch 2\.x's store protocol\)" "$tmp/agent-127.0.0.1.log"
  [ "$rc" = 4 ] || show unserved
else
  not_ok "torch 2.x's interpreter $TORCH2 exists (the unserved-query case needs it)"
fi
finish
