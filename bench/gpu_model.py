"""The GPT-style model of bench/gpu_step_time.py: pre-LayerNorm blocks, tied embedding/output weights,
causal attention through scaled_dot_product_attention (the kernel torch users get; a plain softmax where
the torch is too old to have it). forward(idx, targets) returns the mean cross-entropy in fp32."""

import math

import torch
import torch.nn.functional as F

# name -> (layers, dim, heads, vocab, seq, batch). base: ~110 M parameters (GPT-2 small with a 32000-token
# vocabulary, the size PLATFORM §8's torch timings were taken at). large: ~1.1 B. tiny: the CPU harness check.
SIZES = {
    "base": (12, 768, 12, 32000, 512, 8),
    "large": (20, 2048, 16, 32000, 512, 8),
    "tiny": (2, 64, 4, 512, 32, 2),
}


class Attention(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            y = att.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(torch.nn.Module):
    def __init__(self, layers, dim, heads, vocab, seq):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(seq, dim)
        self.blocks = torch.nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight
        for m in self.modules():  # GPT-2's init: small normal weights keep the 16-bit runs finite
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                torch.nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, torch.nn.Linear) and m.bias is not None:
                torch.nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def build(size, seed=0):
    """(model in fp32 on the CPU, (batch, seq, vocab)) for SIZES[size]."""
    layers, dim, heads, vocab, seq, batch = SIZES[size]
    torch.manual_seed(seed)
    return Gpt(layers, dim, heads, vocab, seq), (batch, seq, vocab)


def parameter_count(model):
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
