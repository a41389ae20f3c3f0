#!/bin/sh
# A minimal rank program: prints the rank variables dsrun set and the arguments it got, on one line.
#   dsrun --num_gpus 2 --no_python examples/print_rank_env.sh
echo "rank=${RANK} local_rank=${LOCAL_RANK} world_size=${WORLD_SIZE} local_size=${LOCAL_SIZE}" \
  "cross_rank=${CROSS_RANK} cross_size=${CROSS_SIZE} master=${MASTER_ADDR}:${MASTER_PORT}" \
  "cuda_visible_devices=${CUDA_VISIBLE_DEVICES} job=${DSRUN_JOB_ID} args=$*"
