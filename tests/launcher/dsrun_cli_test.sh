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
expect_fail "missing -H file" 1 "$tmp/nope: open: No such file or directory" -H "$tmp/nope" x.py
expect_fail "unknown host" 2 "--include 'ghost': host 'ghost' is not in $tmp/hosts (hosts: localhost)" \
  -H "$tmp/hosts" -i ghost --dry_run x.py
expect_fail "conflicting flags" 2 "--num_gpus cannot be combined with --include" --num_gpus 1 -i localhost x.py
expect_fail "bad integer" 2 "--num_gpus: expected an integer, got 'two'" --num_gpus two x.py
expect_fail "unknown flag" 2 "unrecognised option '--bogus'" --bogus x.py
expect_fail "unknown launcher" 2 "unknown launcher 'torchrun' (choices: pdsh," --launcher torchrun x.py
expect_fail "no script" 2 "missing the user script" --num_gpus 1
expect_fail "spawn failure names the program" 1 "spawn '$tmp/missing': No such file or directory" \
  --no_python "$tmp/missing"
printf 'worker-0 slots=2\nworker-1 slots=2\n' >"$tmp/two_hosts"
expect_fail "an unreachable host fails the passwordless-ssh check by name" 1 "passwordless ssh to 'worker-0' failed" \
  -H "$tmp/two_hosts" --master_addr 10.0.0.1 x.py

# --help works without a script.
if "$bin" --help | grep -q -- '--hostfile'; then ok "--help"; else not_ok "--help"; fi

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
