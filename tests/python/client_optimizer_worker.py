"""Rank program of test_client_optimizer_ranks.py: a client torch.optim.RMSprop (two groups) at ZeRO-2 over
STEPS steps, every rank on the same batches (so any world size trains the one-process model); prints
`step N loss X` on rank 0. --save_at K saves after step K and stops; --load resumes from the checkpoint."""

import argparse
import warnings

import torch

import dsrt as deepspeed


def train(ckpt, steps=4, save_at=0, load=False):
    """Trains to `steps` (from the checkpoint with `load`); returns rank 0's losses, printed as they come."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 13), torch.nn.Tanh(), torch.nn.Linear(13, 3))
    weights = [model[0].weight, model[2].weight]
    client = torch.optim.RMSprop([{"params": weights, "weight_decay": 0.1},
                                  {"params": [model[0].bias, model[2].bias], "lr": 0.02}], lr=0.01, momentum=0.5)
    config = {"train_micro_batch_size_per_gpu": 4, "zero_allow_untested_optimizer": True,
              "zero_optimization": {"stage": 2, "reduce_bucket_size": 50, "allgather_bucket_size": 50}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ZeRO's "untested optimizer" caution
        engine, _, _, _ = deepspeed.initialize(model=model, optimizer=client, config=config)
    if load:
        engine.load_checkpoint(ckpt)
    gen = torch.Generator().manual_seed(5)
    data = [torch.randn(4, 8, generator=gen) for _ in range(steps)]
    out = []
    for step in range(engine.global_steps, steps):
        loss = engine(data[step]).pow(2).mean()
        engine.backward(loss)
        engine.step()
        out.append(loss.item())
        if engine.global_rank == 0:
            print(f"step {engine.global_steps} loss {loss.item():.9g}", flush=True)
        if engine.global_steps == save_at:
            engine.save_checkpoint(ckpt)
            break
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--save_at", type=int, default=0)
    parser.add_argument("--load", action="store_true")
    args = parser.parse_args()
    train(args.ckpt, args.steps, args.save_at, args.load)


if __name__ == "__main__":
    main()
