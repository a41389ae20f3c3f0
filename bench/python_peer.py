#!/usr/bin/python3
"""One rank of bench/python_step_time.sh: a Python model trained by dsrt (DeepSpeed's API, any ds_config), by
PyTorch DDP, or by PyTorch DDP with torch.distributed.optim.ZeroRedundancyOptimizer (optimizer-state sharding,
ZeRO stage 1). Started by dsrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, --local_rank).

Models: `mlp` is examples/train_mlp's 4 x Linear(1024, 1024) with ReLU between, MSE on sin(3x)*roll(x); `gpt`
is examples/train_gpt.py's GPT on random character windows (the corpus does not change the time of a step).
A step is timed like train_mlp times it: make the micro-batch, forward, backward, optimizer step, and the
all-reduce of the loss a training script logs; the median is over the steps after 2 warm-ups.
Every rank prints `rank R median_step_ms MS peak_rss_mb MB` (peak resident memory of the whole process).
"""
import argparse
import importlib
import os
import resource
import sys
import time
import types

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer

HERE = os.path.dirname(os.path.abspath(__file__))


def make_model(a):
    if a.model == "mlp":
        layers = []
        for i in range(a.layers):
            layers.append(nn.Linear(a.hidden, a.hidden))
            if i + 1 < a.layers:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)
    if a.impl != "dsrt":
        # train_gpt.py imports dsrt; the torch peers must not load libdsrt (it would count in their RSS).
        sys.modules.setdefault("dsrt", types.ModuleType("dsrt"))
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    import train_gpt
    return train_gpt.GPT(len(train_gpt.VOCAB), a.block_size, a.n_layer, a.n_embd, a.n_head)


def batch(a, gen):
    if a.model == "mlp":
        x = torch.rand(a.micro_batch, a.hidden, generator=gen) * 2 - 1
        return x, torch.sin(3 * x) * torch.roll(x, 1, 1)
    xy = torch.randint(0, 96, (a.micro_batch, a.block_size + 1), generator=gen)
    return xy[:, :-1], xy[:, 1:]


def loss_of(a, model, x, y):
    return F.mse_loss(model(x), y) if a.model == "mlp" else model(x, y)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--impl", choices=["dsrt", "deepspeed", "ddp", "zero1"], required=True)
    p.add_argument("--model", choices=["mlp", "gpt"], required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--micro_batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--block_size", type=int, default=64)
    p.add_argument("--n_layer", type=int, default=3)
    p.add_argument("--n_embd", type=int, default=128)
    p.add_argument("--n_head", type=int, default=4)
    p.add_argument("--local_rank", type=int, default=-1)
    p.add_argument("--deepspeed_config", default=None, help="dsrt and deepspeed only")
    a = p.parse_args()

    torch.manual_seed(a.seed)
    model = make_model(a)
    if a.impl in ("dsrt", "deepspeed"):
        # bench/deepspeed_step_time.sh runs this same code under real DeepSpeed (torchrun) and dsrt (dsrun).
        deepspeed = importlib.import_module(a.impl)
        engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=a.deepspeed_config)
        forward, backward, step = engine, engine.backward, engine.step
    else:
        dist.init_process_group("gloo")
        ddp = nn.parallel.DistributedDataParallel(model)
        if a.impl == "ddp":
            opt = torch.optim.Adam(ddp.parameters(), lr=a.lr)
        else:
            opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=a.lr)

        def step():
            opt.step()
            opt.zero_grad(set_to_none=False)
        forward, backward = ddp, (lambda loss: loss.backward())
    rank = dist.get_rank()
    gen = torch.Generator().manual_seed(a.seed * 1000 + rank)
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        x, y = batch(a, gen)
        loss = loss_of(a, forward, x, y)
        backward(loss)
        step()
        dist.all_reduce(loss.detach())
        times.append((time.perf_counter() - start) * 1000.0)
    tail = sorted(times[2:])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"rank {rank} median_step_ms {tail[len(tail) // 2]:.3f} peak_rss_mb {rss_mb:.1f}", flush=True)
    if a.impl not in ("dsrt", "deepspeed"):
        # Without it a torch peer can abort at exit ("terminate called without an active exception", seen once
        # with ZeroRedundancyOptimizer), as bench/ddp_peer.py avoids the same way.
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
