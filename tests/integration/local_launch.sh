#!/bin/bash
# Integration tests of local launch (docs/local_launch.md), sharness style: each check prints
# "ok N - ..." or "not ok N - ...", and the script exits non-zero if any check failed.
#   local_launch.sh LAUNCHER
# LAUNCHER is build/<dir>/launcher/dsrun, or tests/supervision/local_job_driver (same flags, library only).
# Ranks are tests/integration/rank_program.sh; every wait is a bounded polling loop that fails loudly.
set -u
L=${1:?usage: local_launch.sh LAUNCHER}
[ -x "$L" ] || { echo "not ok 1 - launcher '$L' is not an executable"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
RANK_SH=$HERE/rank_program.sh
WORK=$(mktemp -d /tmp/dsrun-local-launch.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
  n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift
  for line in "$@"; do echo "#   $line"; done
}
# check DESCRIPTION COMMAND...: one test point from a command's success.
check() { local desc=$1; shift; if "$@"; then ok "$desc"; else not_ok "$desc" "failed: $*"; fi; }
show() { echo "#   --- $1:"; sed 's/^/#   | /' "$1" 2>/dev/null | head -20; }

newdir() { local d; d=$(mktemp -d "$WORK/job.XXXXXX"); echo "$d"; }
# launch DIR [FLAGS...] -- [ARGS...]: runs the launcher in the foreground (killed after 120 s);
# sets rc; stdout/stderr go to DIR/stdout, DIR/stderr. Ranks run rank_program.sh with ARGS.
launch() {
  local dir=$1 flags=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  T_OUT=$dir timeout -s KILL 120 env --default-signal "$L" --num_gpus "${NRANKS:-2}" "${flags[@]}" \
    --no_python --no_local_rank "$RANK_SH" "$@" >"$dir/stdout" 2>"$dir/stderr"
  rc=$?
}
# launch_bg DIR [FLAGS...]: same, in the background (no `timeout`: it would signal the launcher
# twice); sets bg (the launcher's pid: env execs it). SIGINT is not ignored, unlike a plain `cmd &`.
launch_bg() {
  local dir=$1
  shift
  T_OUT=$dir env --default-signal "$L" --num_gpus "${NRANKS:-2}" "$@" --no_python --no_local_rank "$RANK_SH" \
    >"$dir/stdout" 2>"$dir/stderr" &
  bg=$!
}
# wait_for SECONDS COMMAND...: polls COMMAND every 50 ms; fails after SECONDS.
wait_for() {
  local limit=$(($1 * 20)) i=0
  shift
  while [ $i -lt $limit ]; do "$@" && return 0; sleep 0.05; i=$((i + 1)); done
  echo "#   gave up after $((limit / 20)) s waiting for: $*"
  return 1
}
state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
gone() { local s; s=$(state "$1"); [ -z "$s" ] || [ "$s" = Z ]; }
# wait_bg SECONDS: waits for the background launcher; sets rc (or kills it and sets rc=timeout).
wait_bg() {
  if wait_for "$1" gone "$bg"; then wait "$bg"; rc=$?; else kill -9 "$bg"; wait "$bg"; rc=timeout; fi
}
all_ready() { local r; for ((r = 0; r < ${NRANKS:-2}; r++)); do [ -e "$1/ready.$r" ] || return 1; done; }
env_of() { tr '\0' '\n' <"$1/env.$2" | sed -n "s/^$3=//p"; }
job_procs() { grep -lzx "DSRUN_JOB_ID=$1" /proc/[0-9]*/environ 2>/dev/null; }
no_job_procs() {
  local left
  left=$(job_procs "$1")
  [ -z "$left" ] && return 0
  echo "#   processes of job $1 left: $left"
  return 1
}
lines_of() { [ -e "$1" ] && wc -l <"$1" || echo 0; }

# --- environment and argv -------------------------------------------------------------------------
weird=$'spaces and "double" \'single\' $HOME ${X} `id` \\ back\nnewline ü∑ 漢字 🙂\ttab'
d=$(newdir)
T_MODE=record WEIRD_VALUE="$weird" launch "$d" -- 'a b' '"q"' "'s'" '$HOME' $'l1\nl2' 'ü∑ 漢字' '' '--flag=x y' '*'
check "a clean 2-rank job exits 0" test "$rc" = 0
for r in 0 1; do
  check "rank $r gets RANK=$r and LOCAL_RANK=$r" \
    test "$(env_of "$d" $r RANK)/$(env_of "$d" $r LOCAL_RANK)" = "$r/$r"
  missing=""
  for var in WORLD_SIZE LOCAL_SIZE CROSS_RANK CROSS_SIZE MASTER_ADDR MASTER_PORT DSRUN_JOB_ID; do
    tr '\0' '\n' <"$d/env.$r" | grep -q "^$var=" || missing="$missing $var"
  done
  check "rank $r gets the rest of the rank environment" test -z "$missing"
  check "rank $r gets WORLD_SIZE=2" test "$(env_of "$d" $r WORLD_SIZE)" = 2
  printf 'WEIRD_VALUE=%s\0' "$weird" >"$d/weird.expected"
  grep -z '^WEIRD_VALUE=' "$d/env.$r" >"$d/weird.$r"
  check "rank $r gets an environment value with quotes, \$, newline and unicode byte for byte" \
    cmp -s "$d/weird.expected" "$d/weird.$r"
  printf '%s\0' 'a b' '"q"' "'s'" '$HOME' $'l1\nl2' 'ü∑ 漢字' '' '--flag=x y' '*' >"$d/args.expected"
  check "rank $r gets its argv byte for byte" cmp -s "$d/args.expected" "$d/args.$r"
done
id0=$(env_of "$d" 0 DSRUN_JOB_ID)
check "both ranks share one non-empty DSRUN_JOB_ID" test -n "$id0" -a "$id0" = "$(env_of "$d" 1 DSRUN_JOB_ID)"
check "rank output reaches the launcher's stdout and stderr" \
  eval 'grep -qx "out 1" "$d/stdout" && grep -qx "err 0" "$d/stderr"'
# The rank is `cat /proc/self/status` itself, so what it shows is exactly what the launcher left it.
d=$(newdir)
T_OUT=$d timeout -s KILL 120 env --default-signal "$L" --num_gpus 1 --no_python --no_local_rank \
  /bin/cat /proc/self/status >"$d/stdout" 2>"$d/stderr"
check "a rank starts with no signal ignored although the launcher ignores SIGPIPE" \
  grep -qx $'SigIgn:\t0000000000000000' "$d/stdout"
check "a rank starts with an empty signal mask" grep -qx $'SigBlk:\t0000000000000000' "$d/stdout"
check "a rank starts with no signal handler of the launcher's" grep -qx $'SigCgt:\t0000000000000000' "$d/stdout"
d2=$(newdir)
T_MODE=record launch "$d2"
check "each job gets its own DSRUN_JOB_ID" test "$(env_of "$d2" 0 DSRUN_JOB_ID)" != "$id0"

# --- exit codes and sibling termination -----------------------------------------------------------
d=$(newdir)
T_MODE=fail T_FAIL_RANK=1 T_FAIL_CODE=3 launch "$d"
check "a rank exiting 3 makes the launcher exit 3" test "$rc" = 3 || show "$d/stderr"
check "the summary names the failing rank, host, pid and code" \
  grep -Eq "rank 1 \(localhost pid $(cat "$d/pid.1")\) exited with code 3; terminated 1 other rank" "$d/stderr"
check "the sibling was terminated with exactly one SIGTERM" test "$(cat "$d/sig.0" 2>/dev/null)" = TERM
check "no process of the failed job is left" no_job_procs "$(env_of "$d" 0 DSRUN_JOB_ID)"

d=$(newdir)
T_MODE=fail T_FAIL_RANK=0 T_SIGNAL=KILL launch "$d"
check "a rank killed by SIGKILL makes the launcher exit 137" test "$rc" = 137
check "the summary names the signal" \
  grep -Eq "rank 0 \(localhost pid [0-9]+\) was killed by signal 9 \(SIGKILL\); terminated 1 other rank" "$d/stderr"
check "the sibling of the killed rank was terminated" test "$(cat "$d/sig.1" 2>/dev/null)" = TERM

# --- signal forwarding ----------------------------------------------------------------------------
for sig in TERM INT HUP; do
  d=$(newdir)
  T_MODE=wait launch_bg "$d"
  if wait_for 60 all_ready "$d"; then
    kill -s "$sig" "$bg"
    wait_bg 60
    num=$(kill -l "$sig")
    check "SIG$sig to the launcher: it exits 128+$num" test "$rc" = $((128 + num))
    check "SIG$sig to the launcher reaches every rank exactly once" \
      test "$(cat "$d/sig.0" 2>/dev/null)/$(cat "$d/sig.1" 2>/dev/null)" = "$sig/$sig"
    check "SIG$sig: no process of the job is left" no_job_procs "$(env_of "$d" 0 DSRUN_JOB_ID)"
  else
    kill -9 "$bg"; wait "$bg"; not_ok "SIG$sig forwarding: the ranks never became ready"; show "$d/stderr"
  fi
done

d=$(newdir)
T_MODE=ignore_term launch_bg "$d" --kill_grace_s 1
if wait_for 60 all_ready "$d"; then
  kill -TERM "$bg"
  wait_bg 120
  check "ranks ignoring SIGTERM are SIGKILLed after --kill_grace_s (exit 137)" test "$rc" = 137
  check "the launcher says it escalated to SIGKILL" grep -q "sending SIGKILL" "$d/stderr"
  check "no process of the stubborn job is left" no_job_procs "$(env_of "$d" 0 DSRUN_JOB_ID)"
else
  kill -9 "$bg"; wait "$bg"; not_ok "kill grace: the ranks never became ready"
fi

d=$(newdir)
T_MODE=exit_first launch "$d" --exit_timeout_s 1 --
check "--exit_timeout_s stops the ranks still running after the first clean exit" \
  grep -q "exit timeout" "$d/stderr"
check "the late rank got one SIGTERM" test "$(cat "$d/sig.1" 2>/dev/null)" = TERM

# --- nothing left behind --------------------------------------------------------------------------
d=$(newdir)
T_MODE=stragglers launch "$d"
check "a job whose ranks leave children behind still exits 0" test "$rc" = 0
check "children left in a rank's process group are killed" gone "$(cat "$d/grouped.0")"
check "children that escaped with setsid are killed" gone "$(cat "$d/escaped.1")"
check "no process with the job's DSRUN_JOB_ID is left" no_job_procs "$(env_of "$d" 0 DSRUN_JOB_ID)"

d=$(newdir)
T_MODE=exec_sleep launch_bg "$d"
if wait_for 60 all_ready "$d"; then
  kill -KILL "$bg"
  wait "$bg" 2>/dev/null
  check "SIGKILL of the launcher kills rank 0 (PDEATHSIG)" wait_for 30 gone "$(cat "$d/pid.0")"
  check "SIGKILL of the launcher kills rank 1 (PDEATHSIG)" wait_for 30 gone "$(cat "$d/pid.1")"
  check "SIGKILL of the launcher: no process of the job is left" \
    wait_for 30 no_job_procs "$(env_of "$d" 0 DSRUN_JOB_ID)"
else
  kill -9 "$bg"; wait "$bg"; not_ok "PDEATHSIG: the ranks never became ready"
fi

# --- output ---------------------------------------------------------------------------------------
d=$(newdir)
T_MODE=lines T_LINES=200 T_WIDTH=10000 launch "$d" --tag_output --
check "--tag_output job exits 0" test "$rc" = 0
bad=$(awk '{
    if (match($0, /^localhost:[01] \| R[01]:[0-9]+:x+$/) && length($0) == length(substr($0, 1, index($0, "x") - 1)) + 10000 &&
        substr($0, 11, 1) == substr($0, 16, 1)) next
    if ($0 ~ /^localhost:[01] \| partial [01]$/) next
    print NR ": " substr($0, 1, 60)
  }' "$d/stdout" | head -5)
check "every forwarded line is whole and tagged with its own rank (no interleaving)" test -z "$bad"
check "all 400 long lines and both unterminated last lines arrive" test "$(lines_of "$d/stdout")" = 402

d=$(newdir)
T_MODE=record launch "$d" --enable_each_rank_log "$d/logs" --
check "--enable_each_rank_log job exits 0" test "$rc" = 0
names=$(ls "$d/logs" 2>/dev/null | tr '\n' ' ')
check "one log file per rank, named <YYYYmmddHHMMSS>_rank<R>.log" \
  eval '[[ "$names" =~ ^[0-9]{14}_rank0\.log\ [0-9]{14}_rank1\.log\ $ ]]'
check "a rank's log holds its stdout and stderr" \
  eval 'grep -qx "out 0" "$d"/logs/*_rank0.log && grep -qx "err 0" "$d"/logs/*_rank0.log'
check "rank output does not reach the launcher's stdout" eval '! grep -q "out [01]" "$d/stdout"'
f=$(newdir)/file
touch "$f"
T_MODE=record launch "$d" --enable_each_rank_log "$f" --
check "--enable_each_rank_log naming a file is refused" \
  eval '[ "$rc" != 0 ] && grep -q "is a file, expected a directory" "$d/stderr"'

d=$(newdir)
T_MODE=wait launch_bg "$d" --save_pid
if wait_for 60 all_ready "$d"; then
  check "--save_pid writes /tmp/<pid>.deepspeed holding the launcher pid" \
    test "$(cat "/tmp/$bg.deepspeed" 2>/dev/null)" = "$bg"
  kill -TERM "$bg"
  wait_bg 60
  check "--save_pid prints 'launcher pid: N'" grep -qx "launcher pid: $bg" "$d/stdout"
  check "--save_pid's file is removed at exit" test ! -e "/tmp/$bg.deepspeed"
else
  kill -9 "$bg"; wait "$bg"; not_ok "--save_pid: the ranks never became ready"
fi

# --- spawn failure --------------------------------------------------------------------------------
d=$(newdir)
timeout -s KILL 120 "$L" --num_gpus 2 --no_python /nonexistent/prog >"$d/stdout" 2>"$d/stderr"
rc=$?
check "a program that does not exist fails the launch" test "$rc" != 0 -a "$rc" != 137
check "the spawn failure names the program and errno" \
  grep -q "spawn '/nonexistent/prog': No such file or directory" "$d/stderr"
check "the spawn failure is one line" test "$(lines_of "$d/stderr")" = 1 || show "$d/stderr"

echo "# $n checks, $failed failed ($L)"
[ "$failed" = 0 ]
