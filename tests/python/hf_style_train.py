"""A training script as Hugging Face's Trainer and DeepSpeed-Chat set DeepSpeed up: its own AdamW over
param groups (no weight decay for biases, an lr of its own for the last layer) and a linear warmup/decay
LambdaLR (transformers' get_linear_schedule_with_warmup), both handed to initialize(). Prints rank 0's
`step N loss X` and dumps the final parameters, on examples/train_mlp.py's model and data."""

import argparse
import sys
from pathlib import Path

import torch
import torch.distributed as dist

import dsrt as deepspeed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from train_mlp import Mlp, micro_batch  # noqa: E402


def linear_schedule_with_warmup(optimizer, warmup, total):
    def factor(step):
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def main():
    parser = argparse.ArgumentParser()
    parser = deepspeed.add_config_arguments(parser)
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--dump_params", default=None)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = Mlp(args.hidden, args.layers)
    last = f"fcs.{args.layers - 1}."
    groups = [
        {"params": [p for n, p in model.named_parameters() if not n.endswith("bias") and not n.startswith(last)],
         "weight_decay": 0.05},
        {"params": [p for n, p in model.named_parameters() if n.endswith("bias") and not n.startswith(last)],
         "weight_decay": 0.0},
        {"params": [p for n, p in model.named_parameters() if n.startswith(last)], "weight_decay": 0.05,
         "lr": 0.003},
    ]
    optimizer = torch.optim.AdamW(groups, lr=0.01, betas=(0.9, 0.98))
    scheduler = linear_schedule_with_warmup(optimizer, warmup=2, total=args.steps)
    engine, optimizer, _, scheduler = deepspeed.initialize(args=args, model=model, optimizer=optimizer,
                                                           lr_scheduler=scheduler)
    rank, world = dist.get_rank(), dist.get_world_size()
    gas, micro = engine.gradient_accumulation_steps(), engine.train_micro_batch_size_per_gpu()
    for step in range(args.steps):
        loss_sum = torch.zeros(1)
        for m in range(gas):
            x, y = micro_batch(args.seed, step * gas + m, micro, args.hidden, rank, world)
            loss = torch.nn.functional.mse_loss(engine(x), y)
            engine.backward(loss)
            engine.step()
            loss_sum += loss.detach()
        dist.all_reduce(loss_sum)
        if rank == 0:
            lrs = ",".join(f"{lr:.6g}" for lr in scheduler.get_last_lr())
            print(f"step {engine.global_steps} loss {loss_sum.item() / (gas * world):.9g} lr {lrs}", flush=True)
    with deepspeed.zero.GatheredParameters(list(model.parameters())):
        if args.dump_params and rank == 0:
            torch.save({n: p.detach().float().clone() for n, p in model.named_parameters()}, args.dump_params)


if __name__ == "__main__":
    main()
