#!/bin/sh
# A rank for the multi-node integration tests: multinode_rank.sh OUT_DIR MODE [ARGS...]
# Records into OUT_DIR (shared by all test-cluster hosts): env.R (environ, byte for byte), args.R (argv after
# MODE, NUL-separated), host.R, pid.R. MODE: record (exit 0) | fail (rank $FAIL_RANK exits $FAIL_CODE once
# every rank has recorded; the others wait) | first_exits (rank 0 exits 0 once every rank has recorded; the
# others wait) | wait (until killed). Every wait is bounded (300 s). Used by multinode_backends.sh and
# launch_hardening.sh.
set -u
out=$1; mode=$2; shift 2
r=${RANK:?RANK is not set}
cat /proc/$$/environ > "$out/env.$r"
printf '%s\0' "$@" > "$out/args.$r"
hostname > "$out/host.$r"
echo $$ > "$out/pid.$r"
idle() { i=0; while [ $i -lt 300 ]; do sleep 1 & wait $!; i=$((i + 1)); done; exit 99; }
all_recorded() { i=0; while [ "$(ls "$out" | grep -c '^pid\.')" -lt "$WORLD_SIZE" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done; }
case "$mode" in
  record) exit 0 ;;
  wait) trap 'exit 143' TERM; idle ;;
  fail)
    trap 'exit 143' TERM
    if [ "$r" = "${NCCL_FAIL_RANK:-5}" ]; then
      all_recorded; echo "rank $r gives up with ${NCCL_FAIL_CODE:-3}" >&2; exit "${NCCL_FAIL_CODE:-3}"
    fi
    idle ;;
  first_exits)
    trap 'exit 143' TERM
    if [ "$r" = 0 ]; then all_recorded; exit 0; fi
    idle ;;
  *) echo "multinode_rank.sh: unknown mode '$mode'" >&2; exit 97 ;;
esac
