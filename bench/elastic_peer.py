#!/usr/bin/python3
"""The torchrun side of bench/elastic_recovery.sh: plain PyTorch DDP (Gloo, CPU) on examples/train_mlp's
elastic run, written as a torchrun user writes it. Same model (hidden 256, 3 Linear layers with ReLU
between them, torch's default init from --seed), Adam, the global batch of the elasticity block (24 samples
split over the ranks), the same synthetic regression task shape (y = sin(3 x) * roll(x, 1)). torchrun starts
one per node with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RESTART_COUNT set.

At start it loads the latest checkpoint of --checkpoint_dir if there is one and prints, on every rank, the
start line train_mlp prints (`resumed from step S rank R world_size W restart_count C ...` or
`starting fresh ...`); rank 0 then prints `step N loss L` after every optimizer step and saves every
--save_every steps (written to a temporary file, then renamed, so a rank killed mid-save leaves the previous
checkpoint whole)."""
import argparse
import os

# Before torch: the bench tells the interpreter's start and torch's import apart from the rest of a restart.
print(f"rank {os.environ.get('RANK')} python started", flush=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from ddp_peer import mlp  # noqa: E402  (the bench's model, one definition; this script's directory is on sys.path)

print(f"rank {os.environ.get('RANK')} torch imported", flush=True)

CHECKPOINT = "checkpoint.pt"


def load(path, model, opt):
    """The step the checkpoint at `path` was taken after, its state loaded; 0 when there is none."""
    if not os.path.exists(path):
        return 0
    state = torch.load(path)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    return state["step"]


def save(path, model, opt, step):
    tmp = f"{path}.tmp{os.getpid()}"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, tmp)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--global_batch", type=int, default=24)
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--checkpoint_dir", required=True)
    p.add_argument("--save_every", type=int, default=2)
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(a.seed)
    net = mlp(a.hidden, a.layers)
    opt = torch.optim.Adam(net.parameters(), lr=a.lr)
    path = os.path.join(a.checkpoint_dir, CHECKPOINT)
    step = load(path, net, opt)
    model = DDP(net)  # broadcasts rank 0's parameters, so every rank starts from the same state
    how = f"resumed from step {step}" if step else "starting fresh"
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "unset")
    print(f"{how} rank {rank} world_size {world} restart_count {restart} (TORCHELASTIC_RESTART_COUNT)", flush=True)
    micro = max(1, a.global_batch // world)
    while step < a.steps:
        gen = torch.Generator().manual_seed(a.seed * 1000003 + step * world + rank)
        x = torch.rand(micro, a.hidden, generator=gen) * 2 - 1
        y = torch.sin(3 * x) * torch.roll(x, 1, 1)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        step += 1
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        if rank == 0:
            print(f"step {step} loss {mean.item() / world:.9g}", flush=True)
            if step % a.save_every == 0:
                save(path, net, opt, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
