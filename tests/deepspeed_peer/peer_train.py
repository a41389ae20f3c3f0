"""One DeepSpeed-style training script, run under real DeepSpeed (`--impl deepspeed`) and under dsrt
(`--impl dsrt`, i.e. `import dsrt as deepspeed`) by test_deepspeed_peer.py and test_deepspeed_checkpoint.py.

What a DeepSpeed user writes: a tiny language model whose output projection is tied to its embedding (GPT
style), Hugging Face's "no weight decay for biases and LayerNorm" param groups passed as model_parameters,
and a ds_config with AdamW, gradient accumulation, gradient clipping and a WarmupLR scheduler. Every rank
prints nothing but rank 0's `step N loss X lr Y` (the loss averaged over the whole global batch) and, with
--dump, the final fp32 parameters. The samples of global step s depend on s only (not on the world size), so
2 ranks with micro-batch m and 1 rank with micro-batch 2m see the same global batches.
--load DIR resumes from a checkpoint (a DeepSpeed checkpoint under dsrt too: dsrt reads DeepSpeed's files),
--save DIR saves at the end.
"""

import argparse
import gc
import importlib
import os

import torch
import torch.distributed as dist
import torch.distributed.nn  # noqa: F401  (before any group: see release_*_group below)

VOCAB, HIDDEN, SEQ = 64, 32, 8


class TiedLm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, HIDDEN)
        self.fc = torch.nn.Linear(HIDDEN, HIDDEN)
        self.norm = torch.nn.LayerNorm(HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, VOCAB, bias=False)
        self.head.weight = self.embed.weight  # tied, as GPT-2's lm_head

    def forward(self, tokens, targets):
        h = self.norm(torch.relu(self.fc(self.embed(tokens))))
        return torch.nn.functional.cross_entropy(self.head(h).view(-1, VOCAB), targets.view(-1))


def global_batch(step, micro_index, size):
    """The `size` samples of micro-batch `micro_index` of global step `step` (all ranks together)."""
    gen = torch.Generator().manual_seed(1000 * step + micro_index)
    tokens = torch.randint(0, VOCAB, (size, SEQ), generator=gen)
    return tokens, (tokens * 7 + torch.roll(tokens, 1, 1)) % VOCAB


def param_groups(model):
    """Hugging Face's grouping: weight decay for weights, none for biases and LayerNorm."""
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or n.startswith("norm.")]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or n.startswith("norm."))]
    return [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", choices=["deepspeed", "dsrt"], required=True)
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--save", default=None)
    parser.add_argument("--load", default=None)
    parser.add_argument("--load_module_only", action="store_true")
    parser.add_argument("--dump", default=None)
    args, _ = parser.parse_known_args()
    # The only line that differs between the two runs is this import.
    deepspeed = importlib.import_module("deepspeed" if args.impl == "deepspeed" else "dsrt")
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()

    torch.manual_seed(3)
    model = TiedLm()
    engine, optimizer, _, scheduler = deepspeed.initialize(args=args, model=model,
                                                           model_parameters=param_groups(model))
    if args.load:
        path, _ = engine.load_checkpoint(args.load, load_module_only=args.load_module_only)
        assert path, f"no checkpoint in {args.load}"
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.impl == "deepspeed" and rank == 0:
        # What DeepSpeed really runs, so the test can check that offload is offload (its CPU Adam).
        base = getattr(engine.optimizer, "optimizer", engine.optimizer)
        print(f"deepspeed {type(engine.optimizer).__name__} over {type(base).__name__} offload_optimizer "
              f"{engine.zero_offload_optimizer() is not None} offload_param {engine.zero_offload_param() is not None}",
              flush=True)
    gas, micro = engine.gradient_accumulation_steps(), engine.train_micro_batch_size_per_gpu()
    for _ in range(args.steps):
        step = engine.global_steps
        loss_sum = torch.zeros(1)
        for m in range(gas):
            tokens, targets = global_batch(step, m, micro * world)
            shard = slice(rank * micro, (rank + 1) * micro)
            loss = engine(tokens[shard], targets[shard])
            engine.backward(loss)
            engine.step()
            loss_sum += loss.detach().float()
        dist.all_reduce(loss_sum)
        if rank == 0:
            print(f"step {engine.global_steps} loss {loss_sum.item() / (gas * world):.9g} "
                  f"lr {scheduler.get_last_lr()[0]:.6g}", flush=True)
    if args.save:
        engine.save_checkpoint(args.save)
    if args.dump:
        params = list(model.parameters())
        with deepspeed.zero.GatheredParameters(params):
            if rank == 0:
                torch.save({n: p.detach().float().clone() for n, p in model.named_parameters()}, args.dump)
    dist.barrier()
    return args.impl


def release_deepspeed_group(impl):
    """Real DeepSpeed leaves torch.distributed's group to the interpreter's teardown, where Gloo's threads
    abort now and then (SIGABRT, "terminate called without an active exception", seen in CI on DeepSpeed's
    rank). dsrt's exit hook collects the engine and destroys the group first (python/dsrt/comm.py); do the same
    for DeepSpeed here, so the peer's run fails only for what it computes. dsrt's run keeps relying on its hook,
    as a user's script would. On torch 2.x, torch.distributed.nn.functional imported after the group exists (the
    first optimizer imports it) holds the group in its default arguments past destroy_process_group: imported
    at the top of this script, before any group, it holds None."""
    if impl == "deepspeed":
        gc.collect()
        if dist.is_initialized():
            dist.destroy_process_group()


if __name__ == "__main__":
    release_deepspeed_group(main())
