#!/usr/bin/python3
"""A small character-level GPT trained with DeepSpeed's Python API on dsrt (ZeRO from examples/ds_config_gpt.json).

Written the way a DeepSpeed user writes it: plain torch.nn, `import dsrt as deepspeed`, argparse with
add_config_arguments, deepspeed.initialize(training_data=...), engine(x, y) / engine.backward(loss) / engine.step().
The corpus is the English fortune-cookie collection of Debian's `fortunes` package (no download).

    build/launcher/dsrun --num_gpus 2 examples/train_gpt.py --steps 600    # or: scripts/run_main_job.sh

With --monitor_dir DIR, DeepSpeed's csv_monitor writes the training loss (and the learning rate) under DIR/gpt,
the script adds the validation loss through engine.monitor, and rank 0 draws DIR/gpt/loss_curve.png at the end
(examples/loss_curve.py, with matplotlib).
"""
import argparse
import glob
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import dsrt as deepspeed

CORPUS_DIR = "/usr/share/games/fortunes"
VOCAB = "\n" + "".join(chr(c) for c in range(32, 127))  # printable ASCII; anything else is dropped


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        # A float buffer, not bool: DDP-style engines broadcast buffers, and Gloo has no bool collectives.
        self.register_buffer("causal", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.causal[:T, :T] == 0, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_embd, n_head):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, block_size) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.apply(self._init_weights)
        self.head.weight = self.tok_emb.weight  # tied: the output projection is the token embedding

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class CharWindows(torch.utils.data.Dataset):
    """Every window of block_size + 1 characters: x is the first block_size, y the same shifted by one."""

    def __init__(self, data, block_size):
        self.data, self.block_size = data, block_size

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, i):
        chunk = self.data[i:i + self.block_size + 1]
        return chunk[:-1], chunk[1:]


def load_corpus(corpus_dir):
    """All fortune files (not the .dat indexes) as one tensor of character ids; '%' separators become blank lines."""
    files = sorted(f for f in glob.glob(os.path.join(corpus_dir, "*"))
                   if os.path.isfile(f) and not f.endswith((".dat", ".u8")))
    if not files:
        raise SystemExit(f"train_gpt.py: no corpus files in '{corpus_dir}'\n"
                         f"  hint: apt-get install fortunes, or pass --corpus DIR with text files")
    text = "".join(open(f, encoding="utf-8", errors="replace").read() for f in files)
    text = text.replace("\t", "    ").replace("\n%\n", "\n\n")
    index = {c: i for i, c in enumerate(VOCAB)}
    ids = [index[c] for c in text if c in index]
    return torch.tensor(ids, dtype=torch.long), len(files)


@torch.no_grad()
def validation_loss(engine, val_data, block_size, windows):
    """Mean loss on `windows` fixed held-out windows, shared out between the ranks (every rank runs forward)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    starts = torch.linspace(0, len(val_data) - block_size - 1, windows).long()[rank::world]
    x = torch.stack([val_data[s:s + block_size] for s in starts])
    y = torch.stack([val_data[s + 1:s + block_size + 1] for s in starts])
    engine.eval()
    total = torch.zeros(2)
    for i in range(0, len(starts), engine.train_micro_batch_size_per_gpu()):
        j = i + engine.train_micro_batch_size_per_gpu()
        total += torch.tensor([engine(x[i:j], y[i:j]).item() * len(x[i:j]), len(x[i:j])])
    engine.train()
    dist.all_reduce(total)
    return (total[0] / total[1]).item()


@torch.no_grad()
def generate(engine, prompt, length, block_size, seed, temperature=0.8):
    """Samples `length` characters after `prompt`; every rank runs the same forwards (ZeRO-3 gathers collectively)."""
    gen = torch.Generator().manual_seed(seed)
    idx = torch.tensor([[VOCAB.index(c) for c in prompt]])
    engine.eval()
    for _ in range(length):
        logits = engine(idx[:, -block_size:])[:, -1, :] / temperature
        idx = torch.cat([idx, torch.multinomial(logits.softmax(dim=-1), 1, generator=gen)], dim=1)
    engine.train()
    return "".join(VOCAB[i] for i in idx[0].tolist())


def main():
    parser = argparse.ArgumentParser(description="character-level GPT on the fortunes corpus, with dsrt")
    parser.add_argument("--local_rank", type=int, default=-1, help="set by the launcher")
    parser.add_argument("--corpus", default=CORPUS_DIR)
    parser.add_argument("--steps", type=int, default=600, help="last optimizer step (a resumed run counts on)")
    parser.add_argument("--block_size", type=int, default=64)
    parser.add_argument("--n_layer", type=int, default=3)
    parser.add_argument("--n_embd", type=int, default=128)
    parser.add_argument("--n_head", type=int, default=4)
    parser.add_argument("--print_every", type=int, default=25)
    parser.add_argument("--eval_every", type=int, default=100)
    parser.add_argument("--eval_windows", type=int, default=256)
    parser.add_argument("--sample_len", type=int, default=240)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--save_dir", default=None, help="save a checkpoint here at the end")
    parser.add_argument("--load_dir", default=None, help="resume from the latest checkpoint here")
    parser.add_argument("--monitor_dir", default=None,
                        help="csv_monitor output path: loss CSVs and loss_curve.png go to MONITOR_DIR/gpt")
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    if args.deepspeed_config is None:
        args.deepspeed_config = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ds_config_gpt.json")
    config = None
    if args.monitor_dir:
        # DeepSpeed takes the config from the arguments or from initialize(config=...), not both: the file
        # with a csv_monitor block added goes in as a dict.
        with open(args.deepspeed_config) as f:
            config = json.load(f)
        config["csv_monitor"] = {"enabled": True, "output_path": args.monitor_dir, "job_name": "gpt"}
        args.deepspeed_config = None
        if not args.load_dir and int(os.environ.get("RANK", "0")) == 0:
            # csv_monitor appends; a fresh run starts fresh files (a resumed one continues them).
            for old in glob.glob(os.path.join(args.monitor_dir, "gpt", "*.csv")):
                os.remove(old)

    torch.manual_seed(args.seed)
    data, nfiles = load_corpus(args.corpus)
    split = int(0.9 * len(data))
    train_set, val_data = CharWindows(data[:split], args.block_size), data[split:]
    model = GPT(len(VOCAB), args.block_size, args.n_layer, args.n_embd, args.n_head)
    engine, _, loader, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters(),
                                                training_data=train_set, config=config)
    rank0 = dist.get_rank() == 0
    if args.load_dir:
        path, client = engine.load_checkpoint(args.load_dir)
        if rank0:
            print(f"resumed from {path} at step {engine.global_steps} (client state {client})", flush=True)
    if rank0:
        nparams = sum(p.numel() for p in model.parameters())
        print(f"corpus: {nfiles} files of {args.corpus}, {len(data):,} characters ({split:,} train), "
              f"vocab {len(VOCAB)}", flush=True)
        print(f"model: {args.n_layer} layers x {args.n_embd} wide, {nparams:,} parameters (embedding tied to the "
              f"output), ZeRO stage {engine.zero_optimization_stage()}, {dist.get_world_size()} ranks x "
              f"{engine.train_micro_batch_size_per_gpu()} windows of {args.block_size}", flush=True)

    def record_validation(val):
        if rank0:
            print(f"step {engine.global_steps:5d} | validation loss {val:.4f}", flush=True)
        # DeepSpeed's monitors count steps in samples, as Train/Samples/train_loss does.
        engine.monitor.write_events([("Validation/loss", val, engine.global_steps * engine.train_batch_size())])

    val = validation_loss(engine, val_data, args.block_size, args.eval_windows)
    record_validation(val)
    start_step, losses = engine.global_steps, []
    t_start = t_last = time.perf_counter()
    while engine.global_steps < args.steps:
        for x, y in loader:
            loss = engine(x, y)
            engine.backward(loss)
            engine.step()
            losses.append(loss.item())
            step = engine.global_steps
            if step % args.print_every == 0 or step == args.steps:
                mean = torch.tensor(sum(losses) / len(losses))
                dist.all_reduce(mean)
                now = time.perf_counter()
                eta = (now - t_start) / (step - start_step) * (args.steps - step)
                if rank0:
                    rate = len(losses) * engine.train_batch_size() / (now - t_last)
                    print(f"step {step:5d}/{args.steps} | loss {mean.item() / dist.get_world_size():.4f} | "
                          f"lr {engine.get_lr()[0]:.2e} | {rate:7.1f} samples/s | "
                          f"ETA {int(eta) // 60}m{int(eta) % 60:02d}s", flush=True)
                losses, t_last = [], time.perf_counter()
            if step % args.eval_every == 0 or step == args.steps:
                val = validation_loss(engine, val_data, args.block_size, args.eval_windows)
                record_validation(val)
            if step >= args.steps:
                break
    if rank0:
        print(f"trained {engine.global_steps - start_step} steps in {time.perf_counter() - t_start:.1f} s", flush=True)
    if args.save_dir:
        engine.save_checkpoint(args.save_dir, client_state={"validation_loss": val})
    sample = generate(engine, "Q: What", args.sample_len, args.block_size, args.seed)
    if rank0:
        print("sample:\n" + sample, flush=True)
    if rank0 and args.monitor_dir:
        draw_loss_curve(os.path.join(args.monitor_dir, "gpt"))


def draw_loss_curve(csv_dir):
    """Rank 0, at the end: the loss curve next to the CSV files; without matplotlib one line says so."""
    from loss_curve import plot_loss_curve
    try:
        print(f"loss curve: {plot_loss_curve(csv_dir)}", flush=True)
    except ImportError:
        print(f"loss curve not drawn: matplotlib is not installed (Debian: apt-get install python3-matplotlib; "
              f"PyPI: pip install matplotlib); the losses are in {csv_dir}/*.csv", flush=True)


if __name__ == "__main__":
    main()
