#!/bin/sh
# A rank of the elastic tests (elastic_agent.sh), run with --no_python:
#   elastic_rank.sh --local_rank=N DIR MODE
# Appends "RANK WORLD_SIZE DSRUN_RESTART_COUNT TORCHELASTIC_RESTART_COUNT MASTER_ADDR HOST GROUP_RANK
# LOCAL_WORLD_SIZE DSRUN_JOB_ID ROLE_RANK" to DIR/starts and "DSRUN_RESTART_COUNT MASTER_PORT" to DIR/ports,
# then by MODE:
#   fail_first   rank 1 of the first world exits 3; every rank of a later world exits 0 at once
#   always_fail  rank 1 exits 7 every time
#   wait         every rank runs until DIR/finish exists, then exits 0
case $1 in --local_rank=*) shift ;; esac
dir=$1 mode=$2
echo "$RANK $WORLD_SIZE $DSRUN_RESTART_COUNT $TORCHELASTIC_RESTART_COUNT $MASTER_ADDR $(hostname) $GROUP_RANK $LOCAL_WORLD_SIZE $DSRUN_JOB_ID ${ROLE_RANK:-unset}" >>"$dir/starts"
echo "$DSRUN_RESTART_COUNT $MASTER_PORT" >>"$dir/ports"
case $mode in
  fail_first)
    [ "$DSRUN_RESTART_COUNT" != 0 ] && exit 0
    [ "$RANK" = 1 ] && { sleep 0.3; exit 3; } ;;
  always_fail)
    [ "$RANK" = 1 ] && { sleep 0.3; exit 7; } ;;
esac
while [ ! -e "$dir/finish" ]; do sleep 0.1; done
exit 0
