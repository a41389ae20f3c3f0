"""Worker of test_gpu_two_ranks.py: one of 2 ranks (RANK/WORLD_SIZE/LOCAL_RANK/MASTER_* set by the test)
training gpu_support's MLP with dsrt over --backend. Rank r takes rows [r*MICRO, (r+1)*MICRO) of each
global batch; rank 0 prints `loss <step> <global mean>`. A DsrtError from init or initialize is printed as
one `REFUSED <json string>` line and exit code 3, so the test can tell a refusal from a crash."""

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

import dsrt as deepspeed
from gpu_support import DEVICE_TYPE, MICRO, batch, ds_config, loss_fn, make_model

REFUSED_RC = 3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True, choices=["gloo", "nccl"])
    parser.add_argument("--stage", type=int, required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--offload", choices=["none", "optimizer", "both"], default="none")
    parser.add_argument("--reduce-bucket-size", type=int, default=0,
                        help="zero_optimization.reduce_bucket_size (0: DeepSpeed's default)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # Gloo: both ranks share GPU 0 (the case under test). NCCL: one GPU per rank (it refuses to share one).
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]) if args.backend == "nccl" else 0)
    if DEVICE_TYPE == "cpu":  # the harness check of docs/gpu.md
        device = torch.device("cpu")
    else:
        torch.cuda.set_device(device)
    model = make_model().to(device)
    try:
        deepspeed.init_distributed(dist_backend=args.backend)
        config = ds_config(args.stage, world=world, offload=None if args.offload == "none" else args.offload)
        if args.reduce_bucket_size:
            config["zero_optimization"]["reduce_bucket_size"] = args.reduce_bucket_size
        engine, _, _, _ = deepspeed.initialize(model=model, config=config)
    except deepspeed.DsrtError as e:
        print("REFUSED " + json.dumps(str(e)), flush=True)
        sys.exit(REFUSED_RC)
    # The printed loss is the global batch's mean, as one process would see it.
    metric_device = device if args.backend == "nccl" else torch.device("cpu")
    for step in range(args.steps):
        x, y = batch(step, rows=MICRO, first_row=rank * MICRO)
        loss = loss_fn(engine(x.to(device)), y.to(device))
        engine.backward(loss)
        engine.step()
        total = loss.detach().to(metric_device).clone()
        dist.all_reduce(total)
        if rank == 0:
            print(f"loss {step} {total.item() / world!r}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    main()
