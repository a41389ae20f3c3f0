"""Worker of test_zero_to_fp32.py, run through dsrun: trains a ZeRO-3 model (one of its weights tied) a few
steps, saves a checkpoint, and rank 0 writes the live full weights the engine holds (gathered) to
CKPT/live.pt for the test to compare every consolidated output with.

The same run then exercises what only ranks can show of deepspeed.utils' safe_get_full_* (gathering the
partitioned fragments) and of engine.no_sync() (no reduction inside it, at ZeRO-1): rank 0 writes what they
returned, with plain torch references, to CKPT/engine_api.pt (checked by test_zero_to_fp32.py's last test)."""

import argparse
import os

import torch
import torch.distributed as dist

import dsrt as deepspeed
from dsrt.utils import safe_get_full_fp32_param, safe_get_full_grad


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(10, 6)
        self.hidden = torch.nn.Linear(6, 6)
        self.out = torch.nn.Linear(6, 10, bias=False)
        self.out.weight = self.embed.weight  # tied: consolidated once, under its first name

    def forward(self, ids):
        return self.out(torch.tanh(self.hidden(self.embed(ids))))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--ckpt", required=True)
    args = deepspeed.add_config_arguments(parser).parse_args()
    rank = int(os.environ["RANK"])
    model = Tied()
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    for step in range(3):
        gen = torch.Generator().manual_seed(100 * step + rank)
        ids = torch.randint(0, 10, (engine.train_micro_batch_size_per_gpu(), 5), generator=gen)
        loss = engine(ids).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
    engine.save_checkpoint(args.ckpt)
    params = [p for _, p in model.named_parameters()]
    with deepspeed.zero.GatheredParameters(params):
        live = {name: p.detach().float().clone() for name, p in model.named_parameters()}
    if rank == 0:
        torch.save(live, os.path.join(args.ckpt, "live.pt"))
        print(f"saved live weights: {sorted(live)}", flush=True)
    check_engine_api(engine, model, live, rank, args.ckpt)


def batch(seed, size=2):
    return torch.randint(0, 10, (size, 5), generator=torch.Generator().manual_seed(seed))


def averaged_reference_grads(weights, ids_list):
    """Plain torch: each rank's gradient of its batches' summed losses on ``weights``, averaged over ranks."""
    model = Tied()
    model.load_state_dict(weights, strict=False)
    for ids in ids_list:
        model(ids).float().pow(2).mean().backward()
    grads = {}
    for name, p in model.named_parameters():
        dist.all_reduce(p.grad)
        grads[name] = p.grad / dist.get_world_size()
    return grads


def gathered(t):
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t.contiguous())
    return out


def check_engine_api(engine, model, live, rank, ckpt):
    results = {"z3_fp32": {n: safe_get_full_fp32_param(p) for n, p in model.named_parameters()}}
    ids = batch(1000 + rank)
    engine.backward(engine(ids).float().pow(2).mean())
    results["z3_grad"] = {n: safe_get_full_grad(p) for n, p in model.named_parameters()}
    results["z3_grad_reference"] = averaged_reference_grads(live, [ids])
    engine.step()

    stage1 = Tied()
    start = {n: p.detach().clone() for n, p in stage1.named_parameters()}
    engine1, *_ = deepspeed.initialize(model=stage1, model_parameters=stage1.parameters(), config={
        "train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "Adam", "params": {"lr": 0.05}},
        "zero_optimization": {"stage": 1}})
    first, second = batch(2000 + rank), batch(3000 + rank)
    weight = stage1.hidden.weight
    with engine1.no_sync():
        engine1.backward(engine1(first).float().pow(2).mean())
        results["no_sync_local"] = gathered(safe_get_full_grad(weight).clone())
    engine1.backward(engine1(second).float().pow(2).mean())
    results["no_sync_reduced"] = gathered(safe_get_full_grad(weight))
    results["no_sync_reference"] = averaged_reference_grads(start, [first, second])["hidden.weight"]
    engine1.step()
    if rank == 0:
        torch.save(results, os.path.join(ckpt, "engine_api.pt"))


if __name__ == "__main__":
    main()
