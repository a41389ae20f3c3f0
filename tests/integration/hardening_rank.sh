#!/bin/sh
# A rank for the hardening tests (local_hardening.sh, launch_hardening.sh):
#   hardening_rank.sh OUT_DIR MODE [N]
# OUT_DIR is shared by every rank (and every test-cluster host). Every wait is bounded (300 s). MODE:
#   torchrun   write torchrun's variables (and RANK, LOCAL_RANK, WORLD_SIZE) as NAME=value lines to tr.RANK; exit 0
#   restart N  append "RANK RESTART_COUNT JOB_ID" to attempts; until the restart count is N, rank 0 exits 5 once
#              every rank of this attempt wrote its line and the others wait to be stopped; then everyone exits 0
#   kids       start a child in the rank's process group and one in a session of its own (setsid), write the
#              three pids to kids.RANK, and wait
#   stuck      write pid.RANK; rank 0 exits 3 once OUT_DIR/go exists, the others wait
#   progress   write a training step to DSRUN_PROGRESS_FILE every 0.2 s; rank 0 stops at step 3 and waits (hung)
#   silent     never write a step; sleep 3 s and exit 0 (a script without the runtime)
set -u
out=$1; mode=$2; n=${3:-0}
r=${RANK:?RANK is not set}
idle() { i=0; while [ $i -lt 300 ]; do sleep 1 & wait $!; i=$((i + 1)); done; exit 99; }
trap 'exit 143' TERM
case "$mode" in
  torchrun)
    for v in RANK LOCAL_RANK WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE LOCAL_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE ROLE_NAME \
             TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RUN_ID; do
      eval "printf '%s=%s\n' $v \"\${$v-<unset>}\""
    done > "$out/tr.$r"
    exit 0 ;;
  restart)
    c=${TORCHELASTIC_RESTART_COUNT:?TORCHELASTIC_RESTART_COUNT is not set}
    echo "$r $c $DSRUN_JOB_ID" >> "$out/attempts"
    [ "$c" -ge "$n" ] && exit 0
    if [ "$r" = 0 ]; then
      i=0; while [ "$(grep -c " $c " "$out/attempts")" -lt "$WORLD_SIZE" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
      exit 5
    fi
    idle ;;
  kids)
    sleep 300 & a=$!
    setsid sleep 300 & b=$!
    echo "$$ $a $b" > "$out/kids.$r"
    idle ;;
  stuck)
    echo $$ > "$out/pid.$r"
    if [ "$r" = 0 ]; then
      i=0; while [ ! -e "$out/go" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done
      exit 3
    fi
    idle ;;
  progress)
    f=${DSRUN_PROGRESS_FILE:?DSRUN_PROGRESS_FILE is not set}
    step=0
    while [ $step -lt 1500 ]; do
      step=$((step + 1)); printf '%20d\n' "$step" > "$f.tmp" && mv "$f.tmp" "$f"
      [ "$r" = 0 ] && [ $step -ge 3 ] && idle
      sleep 0.2
    done
    exit 98 ;;
  silent) sleep 3; exit 0 ;;
  *) echo "hardening_rank.sh: unknown mode '$mode'" >&2; exit 97 ;;
esac
