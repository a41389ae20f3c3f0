"""Worker of test_partial_load.py, run through dsrun. `pretrain` trains a bf16 ZeRO-2 model 3 steps and
saves it (tag 'pretrained', save_latest=False) with its fp32 masters beside it; `finetune` (any number
of ranks) loads it with load_module_only=True into a fresh engine, checks what DeepSpeed would have,
then steps it next to a twin engine built from the same weights and prints whether they agree."""

import argparse
import json

import torch

import dsrt as deepspeed


def model_of(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 24), torch.nn.Tanh(), torch.nn.Linear(24, 3))


def train(engine, steps, seed):
    rank = torch.distributed.get_rank()
    for step in range(steps):
        gen = torch.Generator().manual_seed(seed * 1000 + step * 10 + rank)
        x = torch.randn(engine.train_micro_batch_size_per_gpu(), 8, generator=gen).to(torch.bfloat16)
        loss = engine(x).float().pow(2).mean()
        engine.backward(loss)
        engine.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("mode", choices=["pretrain", "finetune"])
    parser.add_argument("--ckpt", required=True)
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    rank = int(__import__("os").environ["RANK"])

    if args.mode == "pretrain":
        engine, _, _, _ = deepspeed.initialize(args=args, model=model_of(1))
        train(engine, 3, seed=1)
        engine.save_checkpoint(args.ckpt, tag="pretrained", client_state={"run": "pretrain"}, save_latest=False)
        masters = engine._engine.full_params()
        if rank == 0:
            torch.save(masters, f"{args.ckpt}/masters.pt")
        return

    masters = torch.load(f"{args.ckpt}/masters.pt")
    rounded = [m.to(torch.bfloat16).float() for m in masters]
    engine, _, _, _ = deepspeed.initialize(args=args, model=model_of(2))
    path, client = engine.load_checkpoint(args.ckpt, tag="pretrained", load_module_only=True)
    loaded = engine._engine.full_params()
    print(f"rank {rank} world {torch.distributed.get_world_size()} loaded {path.rsplit('/', 1)[-1]} "
          f"steps {engine.global_steps} masters_rounded {all(torch.equal(a, b) for a, b in zip(loaded, rounded))} "
          f"client {json.dumps(client, sort_keys=True)}", flush=True)

    twin_model = model_of(3)
    with torch.no_grad():
        for p, w in zip(twin_model.parameters(), rounded):
            p.copy_(w)
    twin, _, _, _ = deepspeed.initialize(args=args, model=twin_model)
    train(engine, 2, seed=5)
    train(twin, 2, seed=5)
    same = all(torch.equal(a, b) for a, b in zip(engine._engine.full_params(), twin._engine.full_params()))
    print(f"rank {rank} steps {engine.global_steps} same_as_fresh_engine {same}", flush=True)


if __name__ == "__main__":
    main()
