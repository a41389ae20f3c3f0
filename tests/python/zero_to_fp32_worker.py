"""Worker of test_zero_to_fp32.py, run through dsrun: trains a ZeRO-3 model (one of its weights tied) a few
steps, saves a checkpoint, and rank 0 writes the live full weights the engine holds (gathered) to
CKPT/live.pt for the test to compare every consolidated output with."""

import argparse
import os

import torch

import dsrt as deepspeed


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


if __name__ == "__main__":
    main()
