#!/bin/sh
# A rank for the local-launch integration tests. It records what it was given and then behaves as
# T_MODE says. Files go to $T_OUT: env.R (its environ, byte for byte), args.R (argv, NUL-separated),
# pid.R, ready.R (written last, once the rank is set up), sig.R (one
# line per signal received). Every wait is bounded so a broken launcher cannot leave it running forever.
set -u
out=${T_OUT:?T_OUT must name a directory}
r=${RANK:?RANK is not set}
cat /proc/$$/environ > "$out/env.$r"
printf '%s\0' "$@" > "$out/args.$r"
echo $$ > "$out/pid.$r"

record() { echo "$1" >> "$out/sig.$r"; exit 0; }
ready() { touch "$out/ready.$r"; }
# Waits (at most 300 s) in a way that lets traps run at once.
idle() { i=0; while [ $i -lt 300 ]; do sleep 1 & wait $!; i=$((i + 1)); done; exit 99; }
all_ready() {
  i=0
  while [ $i -lt 3000 ]; do
    n=0
    for f in "$out"/ready.*; do [ -e "$f" ] && n=$((n + 1)); done
    [ "$n" -ge "${WORLD_SIZE:-1}" ] && return 0
    sleep 0.01
    i=$((i + 1))
  done
  echo "rank $r: the other ranks never became ready" >&2
  exit 98
}

case "${T_MODE:-record}" in
  record)
    echo "out $r"
    echo "err $r" >&2
    exit "${T_EXIT:-0}" ;;
  wait)  # until a signal arrives, which is recorded
    trap 'record TERM' TERM; trap 'record INT' INT; trap 'record HUP' HUP
    ready; idle ;;
  fail)  # rank T_FAIL_RANK exits T_FAIL_CODE (or dies of T_SIGNAL) once all are up; the others wait
    trap 'record TERM' TERM
    ready; all_ready
    if [ "$r" = "${T_FAIL_RANK:-0}" ]; then
      if [ -n "${T_SIGNAL:-}" ]; then kill -"$T_SIGNAL" $$; fi
      exit "${T_FAIL_CODE:-1}"
    fi
    idle ;;
  exit_first)  # rank 0 exits 0 once all are up; the others wait for a signal
    trap 'record TERM' TERM
    ready; all_ready
    [ "$r" = 0 ] && exit 0
    idle ;;
  ignore_term)
    trap '' TERM
    ready; idle ;;
  exec_sleep)  # the rank process itself becomes `sleep` (PDEATHSIG survives exec)
    ready; exec sleep 300 ;;
  stragglers)  # leaves one child in its process group and one that escapes it with setsid
    sleep 300 & echo $! > "$out/grouped.$r"
    setsid sleep 300 & echo $! > "$out/escaped.$r"
    exit 0 ;;
  lines)  # T_LINES lines of T_WIDTH bytes each on stdout, written in pieces that straddle pipe buffers
    awk -v r="$r" -v n="${T_LINES:-200}" -v w="${T_WIDTH:-10000}" 'BEGIN {
      pad = "x"; while (length(pad) < w) pad = pad pad
      for (i = 0; i < n; i++) { printf "R%s:%d:%s", r, i, substr(pad, 1, w / 2); fflush(); printf "%s\n", substr(pad, 1, w - w / 2) }
    }'
    printf 'partial %s' "$r"
    exit 0 ;;
  *)
    echo "rank_program.sh: unknown T_MODE '$T_MODE'" >&2
    exit 97 ;;
esac
