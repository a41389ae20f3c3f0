#!/usr/bin/env bash
# dsrun end to end in local mode: --dry_run JSON, real 2-rank launches of examples/print_rank_env.sh with
# argv fidelity, and for every user error an empty stdout, at most two stderr lines (message + hint),
# the right exit code and no stack trace.
# Usage: dsrun_cli_test.sh PATH/TO/dsrun SOURCE_DIR
set -u
bin=${1:?usage: $0 PATH/TO/dsrun SOURCE_DIR}
src=${2:?usage: $0 PATH/TO/dsrun SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; failures=$((failures + 1)); }
# Run from an empty directory with no /job/hostfile influence: -H is given where a hostfile matters.
cd "$tmp" || exit 1
unset CUDA_VISIBLE_DEVICES KMP_AFFINITY DS_ENV_FILE

# expect_fail NAME RC STDERR_SUBSTRING ARGS...
expect_fail() {
  local name=$1 want_rc=$2 want=$3
  shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local lines
  lines=$(grep -c '' "$tmp/err")
  if [ $rc -eq "$want_rc" ] && [ ! -s "$tmp/out" ] && grep -qF -- "$want" "$tmp/err" && [ "$lines" -le 2 ] &&
    head -n1 "$tmp/err" | grep -q '^dsrun: ' && ! grep -q 'terminate called\|internal error' "$tmp/err"; then
    ok "$name"
  else
    not_ok "$name: rc=$rc (want $want_rc) stdout='$(cat "$tmp/out")' stderr='$(cat "$tmp/err")'"
  fi
}

json_get() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }

# --dry_run: one JSON object on stdout, exit 0, nothing launched.
if out=$("$bin" --dry_run --num_gpus 2 --bind_cores_to_rank --bind_core_list 0-3 --no_python \
  "$tmp/never_run.sh" "a b" 2>"$tmp/err"); then
  got=$(printf '%s' "$out" | json_get '[j["launcher"], j["master_addr"], j["master_port"], list(j["world_info"]),
    [r["cores"] for r in j["ranks"]], j["ranks"][1]["argv"], j["ranks"][1]["env"]["LOCAL_RANK"], j["node_commands"]]')
  want="['local', '127.0.0.1', 29500, ['localhost'], ['0-1', '2-3'], ['$tmp/never_run.sh', '--local_rank=1', 'a b'], '1', []]"
  if [ "$got" = "$want" ]; then ok "dry_run prints the plan"; else not_ok "dry_run prints the plan: $got"; fi
else
  not_ok "dry_run exit code: $(cat "$tmp/err")"
fi

# A real 2-rank launch: every rank prints its variables and arguments, byte for byte.
printf 'localhost slots=2\n' >"$tmp/hosts"
arg1="it's \"quoted\" \$HOME"
arg2=$(printf 'two\nlines ✓')
if "$bin" -H "$tmp/hosts" --no_python --no_local_rank --master_port 29999 \
  sh -c 'printf "%s|%s|%s|%s|%s|%s|%s\n" "$RANK" "$LOCAL_RANK" "$WORLD_SIZE" "$MASTER_ADDR:$MASTER_PORT" \
         "$CUDA_VISIBLE_DEVICES" "$1" "$2" >"$0.$RANK"' "$tmp/rank" "$arg1" "$arg2" >"$tmp/out" 2>"$tmp/err"; then
  r0=$(cat "$tmp/rank.0")
  r1=$(cat "$tmp/rank.1")
  if [ "$r0" = "0|0|2|127.0.0.1:29999|0,1|$arg1|$arg2" ] && [ "$r1" = "1|1|2|127.0.0.1:29999|0,1|$arg1|$arg2" ]; then
    ok "2-rank launch with argv fidelity"
  else
    not_ok "2-rank launch with argv fidelity: '$r0' / '$r1'"
  fi
else
  not_ok "2-rank launch exit code: $(cat "$tmp/err")"
fi

# The README's example program.
if out=$("$bin" --num_gpus 2 --no_python "$src/examples/print_rank_env.sh" hello 2>"$tmp/err") &&
  printf '%s\n' "$out" | grep -q '^rank=0 local_rank=0 world_size=2 .* args=--local_rank=0 hello$' &&
  printf '%s\n' "$out" | grep -q '^rank=1 local_rank=1 world_size=2 .* args=--local_rank=1 hello$'; then
  ok "examples/print_rank_env.sh prints both ranks"
else
  not_ok "examples/print_rank_env.sh: '$out' stderr '$(cat "$tmp/err")'"
fi

# .deepspeed_env in the current directory reaches local ranks.
printf 'FROM_FILE=x y\n' >"$tmp/.deepspeed_env"
if out=$("$bin" --no_python --no_local_rank sh -c 'printf "%s\n" "$FROM_FILE"' 2>"$tmp/err") && [ "$out" = "x y" ]; then
  ok ".deepspeed_env applies to local ranks"
else
  not_ok ".deepspeed_env applies to local ranks: '$out' $(cat "$tmp/err")"
fi
rm -f "$tmp/.deepspeed_env"

# A failing rank's exit code comes back.
"$bin" --no_python --no_local_rank sh -c 'exit 7' >/dev/null 2>&1
rc=$?
if [ $rc -eq 7 ]; then ok "exit code propagates"; else not_ok "exit code propagates: $rc"; fi

# User errors: one line (+ hint), empty stdout, exit code 2 for bad input, 1 for I/O.
printf 'worker-0 slots=2\nworker-1 slot=2\n' >"$tmp/bad_hosts"
expect_fail "bad hostfile names file:line" 2 "$tmp/bad_hosts:2: expected 'slots=<N>' after host 'worker-1', got 'slot=2'" \
  -H "$tmp/bad_hosts" --dry_run x.py
expect_fail "missing -H file is bad input" 2 "$tmp/nope: open: No such file or directory" -H "$tmp/nope" x.py
expect_fail "unknown host" 2 "--include 'ghost': host 'ghost' is not in $tmp/hosts (hosts: localhost)" \
  -H "$tmp/hosts" -i ghost --dry_run x.py
expect_fail "conflicting flags" 2 "--num_gpus cannot be combined with --include" --num_gpus 1 -i localhost x.py
expect_fail "bad integer" 2 "--num_gpus: expected an integer, got 'two'" --num_gpus two x.py
expect_fail "unknown flag" 2 "unrecognised option '--bogus'" --bogus x.py
expect_fail "unknown launcher" 2 "unknown launcher 'torchrun' (choices: pdsh," --launcher torchrun x.py
expect_fail "no script" 2 "missing the user script" --num_gpus 1
expect_fail "spawn failure names the program" 1 "spawn '$tmp/missing': No such file or directory" \
  --no_python "$tmp/missing"
printf '127.0.0.1 slots=2\n127.0.0.2 slots=2\n' >"$tmp/two_hosts"
expect_fail "an unreachable host fails the passwordless-ssh check by name" 1 "passwordless ssh to '127.0.0.1' failed" \
  -H "$tmp/two_hosts" --ssh_port 1 --master_addr 10.0.0.1 x.py
expect_fail "--python names the flag its path came from" 2 "--python '$tmp/nope': No such file or directory" \
  --python "$tmp/nope" x.py
expect_fail "an unknown flag gets a suggestion" 2 "unrecognised option '--num_gpu_s' (did you mean --num_gpus?)" \
  --num_gpu_s 2 x.py
expect_fail "--force_multi without a hostfile does not blame /job/hostfile" 1 "(local mode: no hostfile)" \
  --force_multi --ssh_port 1 x.py
if grep -q '/job/hostfile' "$tmp/err"; then not_ok "--force_multi hint names no hostfile: $(cat "$tmp/err")"; fi

# DeepSpeed's flags: dashed spellings (as torchrun accepts them), --venv_script sourced before the node's launch,
# --comment and --account passed to srun.
if out=$("$bin" --dry_run --num-gpus 2 --no-python /bin/true 2>"$tmp/err") &&
  [ "$(printf '%s' "$out" | json_get 'len(j["ranks"])')" = 2 ]; then ok "dashed flag spellings"
else not_ok "dashed flag spellings: $(cat "$tmp/err")"; fi
got=$("$bin" --dry_run -H "$tmp/two_hosts" --venv_script /opt/venv/bin/activate --master_addr 10.0.0.1 x.py 2>"$tmp/err" |
  json_get '" ".join(j["node_commands"][0]["argv"])')
case $got in *"pdsh "*" . /opt/venv/bin/activate; export "*) ok "--venv_script is sourced first on each node" ;;
  *) not_ok "--venv_script is sourced first on each node: $got $(cat "$tmp/err")" ;; esac
got=$("$bin" --dry_run -H "$tmp/two_hosts" --launcher slurm --comment "run 7" --account proj --master_addr 10.0.0.1 \
  x.py 2>"$tmp/err" | json_get 'j["node_commands"][0]["argv"]')
case $got in *"'--comment=run 7', '--account=proj'"*) ok "--comment and --account reach srun" ;;
  *) not_ok "--comment and --account reach srun: $got $(cat "$tmp/err")" ;; esac
# Without GPUs a slot is a rank's number: --include names ranks as --num_gpus counts them (one GPU: nothing to check).
gpus=$(ls /dev/nvidia[0-9]* 2>/dev/null | wc -l)
if [ "$gpus" = 1 ]; then echo "# skipped --include localhost:0,1: this machine has exactly one GPU"
elif [ "$("$bin" --dry_run --include localhost:0,1 x.py 2>"$tmp/err" | json_get 'len(j["ranks"])')" = 2 ]; then
  ok "--include localhost:0,1 plans two ranks"
else not_ok "--include localhost:0,1 plans two ranks: $(cat "$tmp/err")"; fi

# --dry_run contacts no host (a recording ssh stands in for OpenSSH; only its offline 'ssh -G' may run), prints
# indented JSON, shows where MASTER_ADDR would come from, and warns about each host without an address; the
# launch itself refuses that host by file and line, before anything runs.
mkdir -p "$tmp/fakebin"
cat >"$tmp/fakebin/ssh" <<EOF
#!/bin/sh
echo "\$*" >>"$tmp/ssh_calls"
for host; do :; done
case " \$* " in *" -G "*) echo "hostname \$host"; exit 0 ;; esac
exit 255
EOF
chmod +x "$tmp/fakebin/ssh"
printf '127.0.0.1 slots=1\nno-such-host.invalid slots=1\n127.0.0.2 slots=1\n' >"$tmp/three_hosts"
rm -f "$tmp/ssh_calls"
out=$(PATH="$tmp/fakebin:$PATH" "$bin" --dry_run -H "$tmp/three_hosts" --no_python "$tmp/never_run.sh" 2>"$tmp/err")
rc=$?
if [ $rc -eq 0 ] && [ "$(printf '%s' "$out" | json_get 'j["master_addr_inferred_from"], len(j["ranks"])')" = '127.0.0.1 3' ] &&
  [ "$(printf '%s\n' "$out" | sed -n 2p)" = '  "world_info": {' ] &&
  grep -qF "$tmp/three_hosts:2: host 'no-such-host.invalid' cannot be resolved" "$tmp/err" &&
  ! grep -vE -- '(^| )-G ' "$tmp/ssh_calls" >/dev/null 2>&1; then
  ok "dry run contacts no host, warns about the unresolvable one, prints indented JSON"
else
  not_ok "dry run offline: rc=$rc out=$(printf '%s' "$out" | head -3) err=$(cat "$tmp/err") ssh=$(cat "$tmp/ssh_calls" 2>/dev/null)"
fi
rm -f "$tmp/ssh_calls"
PATH="$tmp/fakebin:$PATH" expect_fail "an unresolvable host stops the launch by file and line" 2 \
  "$tmp/three_hosts:2: host 'no-such-host.invalid' cannot be resolved" -H "$tmp/three_hosts" --no_python "$tmp/never_run.sh"
if grep -vE -- '(^| )-G ' "$tmp/ssh_calls" >/dev/null 2>&1; then not_ok "nothing was contacted: $(cat "$tmp/ssh_calls")"; fi

# The README's dry run in a network namespace with no network at all: it plans, and warns about each host.
if unshare -n true 2>/dev/null; then
  if out=$(unshare -n "$bin" -H "$src/hostfiles/two_nodes.example" -i 'worker-0@worker-1:0,2' --dry_run train.py 2>"$tmp/err") &&
    [ "$(printf '%s' "$out" | json_get 'len(j["ranks"])')" = 10 ] && [ "$(grep -c 'cannot be resolved' "$tmp/err")" = 2 ]; then
    ok "the README's dry run works with no network"
  else not_ok "the README's dry run works with no network: $(cat "$tmp/err")"; fi
else
  echo "# SKIP the no-network dry run: 'unshare -n' needs root (CI runs as root); the recording-ssh check above still ran"
fi

# A failed job ends with the root-cause block: first failing rank, host, exit code or signal, its stderr's last
# lines (a Python exception's traceback), or its log file with --enable_each_rank_log.
py=$(command -v python3)
printf 'import os, sys, time\nif os.environ["RANK"] == "1":\n    raise ValueError("boom in rank 1")\ntime.sleep(30)\n' >"$tmp/boom.py"
"$bin" --num_gpus 2 --python "$py" "$tmp/boom.py" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && tail -n 1 "$tmp/err" | grep -q '^dsrun: =====' &&
  tail -n 12 "$tmp/err" | grep -q '^dsrun: Root Cause (first observed failure):$' &&
  tail -n 12 "$tmp/err" | grep -q '^dsrun:   rank     : 1 (local_rank: 1)$' &&
  tail -n 12 "$tmp/err" | grep -q '^dsrun:   exitcode : 1 (pid: [0-9]*)$' &&
  tail -n 3 "$tmp/err" | grep -q '^dsrun:     ValueError: boom in rank 1$'; then ok "root cause of a Python exception"
else not_ok "root cause of a Python exception: rc=$rc $(cat "$tmp/err")"; fi
"$bin" --num_gpus 2 --no_python --no_local_rank sh -c 'echo "rank $RANK going" >&2; [ "$RANK" = 0 ] && kill -9 $$; sleep 30' \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 137 ] && tail -n 8 "$tmp/err" | grep -q '^dsrun:   exitcode : 137 (pid: [0-9]*, killed by signal 9 (SIGKILL))$' &&
  tail -n 3 "$tmp/err" | grep -q '^dsrun:     rank 0 going$'; then ok "root cause of a signal"
else not_ok "root cause of a signal: rc=$rc $(cat "$tmp/err")"; fi
"$bin" --num_gpus 2 --python "$py" --enable_each_rank_log "$tmp/logs" "$tmp/boom.py" >"$tmp/out" 2>"$tmp/err"
log=$(ls "$tmp"/logs/*_rank1.log 2>/dev/null)
if [ -n "$log" ] && head -n 1 "$tmp/err" | grep -qF "dsrun: ranks 0-1 on localhost write their output to $tmp/logs/" &&
  grep -qF "dsrun:   log file : $log" "$tmp/err" && tail -n 3 "$tmp/err" | grep -q 'ValueError: boom in rank 1'; then
  ok "rank logs announced at start and named in the root cause"
else not_ok "rank logs announced at start and named in the root cause: $(cat "$tmp/err")"; fi

# --tree_width: the dry run shows the agent tree; other launchers ignore it with a warning.
printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n127.0.0.3 slots=1\n127.0.0.4 slots=1\n127.0.0.5 slots=1\n' >"$tmp/five_hosts"
if out=$("$bin" -H "$tmp/five_hosts" --launcher agent --tree_width 2 --dry_run train.py 2>"$tmp/err") &&
  [ "$(printf '%s' "$out" | json_get '[j["agent_tree"][k] for k in ("width", "hosts", "roots", "levels")]')" = "[2, 5, 2, 2]" ] &&
  [ "$(printf '%s' "$out" | json_get 'j["agent_tree"]["listing"][1]')" = "  127.0.0.2 (rank 1)" ] &&
  [ "$(printf '%s' "$out" | json_get 'j["agent_tree"]["starts"]')" = "once every agent of the tree holds its launch and the mesh probe's 20 pairs connected: TreeGo, one pass down" ]; then
  ok "dry run shows the agent tree"
else not_ok "dry run shows the agent tree: $(printf '%s' "$out" | tail -20) $(cat "$tmp/err")"; fi
# Without the probe the tree is still assembled before it starts, and the dry run claims no probe.
if out=$("$bin" -H "$tmp/five_hosts" --launcher agent --tree_width 2 --no_mesh_probe --dry_run train.py 2>"$tmp/err") &&
  [ "$(printf '%s' "$out" | json_get 'j["agent_tree"]["starts"]')" = "once every agent of the tree holds its launch (no mesh probe: --no_mesh_probe): TreeGo, one pass down" ] &&
  out=$("$bin" -H "$tmp/five_hosts" --launcher agent --tree_width 8 --no_mesh_probe --dry_run train.py 2>"$tmp/err") &&
  [ "$(printf '%s' "$out" | json_get 'j["agent_tree"]["starts"]')" = "once dsrun has welcomed every agent (all are roots)" ]; then
  ok "dry run says when a tree launch starts, without claiming a probe it will not run"
else not_ok "dry run: when the tree starts without the probe: $(printf '%s' "$out" | tail -20) $(cat "$tmp/err")"; fi
# The default (auto): the star for these 5 hosts, a tree of width 8 for 17, each saying why; 0 keeps the star.
for i in $(seq 1 17); do echo "127.0.1.$i slots=1"; done >"$tmp/seventeen_hosts"
if out=$("$bin" -H "$tmp/five_hosts" --launcher agent --dry_run train.py 2>"$tmp/err") &&
  [ "$(printf '%s' "$out" | json_get '[j["agent_launch"]["tree_width"], "agent_tree" in j]')" = "[0, False]" ] &&
  [ "$(printf '%s' "$out" | json_get 'j["agent_launch"]["why"]')" = "--tree_width auto: 5 hosts, at most 16: dsrun dials every agent (the star)" ] &&
  out=$("$bin" -H "$tmp/seventeen_hosts" --launcher agent --dry_run train.py 2>"$tmp/err") &&
  [ "$(printf '%s' "$out" | json_get '[j["agent_launch"]["tree_width"], j["agent_tree"]["width"], j["agent_tree"]["hosts"]]')" = "[8, 8, 17]" ] &&
  [ "$(printf '%s' "$out" | json_get 'j["agent_launch"]["why"]')" = "--tree_width auto: 17 hosts, more than 16: a tree of width 8 (--tree_width 0 keeps the star)" ] &&
  out=$("$bin" -H "$tmp/seventeen_hosts" --launcher agent --tree_width 0 --dry_run train.py 2>"$tmp/err") &&
  [ "$(printf '%s' "$out" | json_get '[j["agent_launch"]["tree_width"], "agent_tree" in j]')" = "[0, False]" ]; then
  ok "dry run says which launch shape --tree_width auto chose and why"
else not_ok "dry run and --tree_width auto: $(printf '%s' "$out" | tail -20) $(cat "$tmp/err")"; fi
if out=$("$bin" -H "$tmp/five_hosts" --launcher pdsh --tree_width 2 --dry_run train.py 2>"$tmp/err") &&
  grep -qF -- "--tree_width shapes the agent backend's launch only; ignored with launcher pdsh" "$tmp/err" &&
  [ "$(printf '%s' "$out" | json_get '"agent_tree" in j')" = False ]; then
  ok "--tree_width is ignored with a warning off the agent backend"
else not_ok "--tree_width off the agent backend: $(cat "$tmp/err")"; fi

# The agents' own port as MASTER_PORT: refused before any agent is dialled, naming both (the port check would
# otherwise blame dsrun-agent on the master's host). The TLS directory is never read.
expect_fail "MASTER_PORT on the agents' port is refused by name" 2 \
  "MASTER_PORT 29500 is the agents' port (--agent_port 29500)" \
  -H "$tmp/five_hosts" --launcher agent --agent_port 29500 --tls_dir "$tmp/no_tls" train.py

# --help works without a script.
if "$bin" --help | grep -q -- '--hostfile'; then ok "--help"; else not_ok "--help"; fi

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
