"""Shared pieces of the GPU suite (tests/gpu/): the loud skip, the model, the data and the configs.

Every test module calls ``require_gpu()`` first. Without a GPU the whole module is skipped with a reason
naming what is missing (``pytest -rs`` lists it); with DSRT_GPU_REQUIRED=1 (scripts/gpu_check.sh sets it)
a missing GPU or dsrt build is an error instead, so the GPU machine can never pass by skipping.
Kept out of conftest.py: tests/python has its own conftest and both suites may be collected together.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REQUIRED = os.environ.get("DSRT_GPU_REQUIRED") == "1"
# Harness check only (docs/gpu.md): DSRT_GPU_SUITE_ON_CPU=1 runs the suite's logic on the CPU, where
# "cuda" below becomes "cpu"; it proves the tests and workers run, not that anything works on a GPU.
ON_CPU = os.environ.get("DSRT_GPU_SUITE_ON_CPU") == "1"
DEVICE_TYPE = "cpu" if ON_CPU else "cuda"


def _missing():
    """Why this process cannot run the suite, or None."""
    try:
        import torch
    except ImportError as e:
        return f"torch is not importable by {sys.executable} ({e})"
    if not torch.cuda.is_available() and not ON_CPU:
        built = torch.version.cuda or "none (a CPU-only torch build)"
        return (f"no CUDA device: torch {torch.__version__} (CUDA {built}) sees "
                f"torch.cuda.device_count()={torch.cuda.device_count()}; run on a GPU machine "
                "(scripts/gpu_check.sh, docs/gpu.md)")
    try:
        import dsrt  # noqa: F401
    except ImportError as e:
        return f"dsrt is not importable ({e}); put <build>/python on PYTHONPATH"
    return None


def require_gpu():
    """Skips the calling test module (or fails it, under DSRT_GPU_REQUIRED=1) unless a GPU and dsrt are here;
    turns TF32 off so fp32 on the GPU is comparable to 1e-5."""
    why = _missing()
    if why is not None:
        if REQUIRED:
            raise RuntimeError(f"DSRT_GPU_REQUIRED=1 but the GPU suite cannot run: {why}")
        pytest.skip(f"GPU suite skipped: {why}", allow_module_level=True)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


# ---- model, data, configs (shared with the subprocess workers) ---------------------------------------
IN, HIDDEN, OUT = 32, 64, 16
MICRO = 8
LR = 1e-2


def make_model(seed=7):
    """A 2-layer MLP in fp32 on the CPU (torch's default init from ``seed``); callers move it."""
    import torch
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.GELU(), torch.nn.Linear(HIDDEN, OUT))


def batch(step, rows=MICRO, first_row=0):
    """Rows [first_row, first_row + rows) of step ``step``'s global batch, as fp32 CPU tensors: a pure
    function of (step, row), so every process and device sees the same numbers."""
    import torch
    w = torch.randn(IN, OUT, generator=torch.Generator().manual_seed(999)) / IN ** 0.5  # one task for all steps
    x = torch.randn(4 * MICRO, IN, generator=torch.Generator().manual_seed(1000 + step))
    y = torch.sin(2 * x @ w)
    return x[first_row:first_row + rows], y[first_row:first_row + rows]


def loss_fn(out, y):
    # In fp32 whatever the model's dtype: the 16-bit cases compare their loss with fp32's.
    return (out.float() - y.float()).pow(2).mean()


def ds_config(stage=0, dtype="fp32", offload=None, micro=MICRO, world=1):
    """The ds_config of one case. offload: None, "optimizer" or "both" (optimizer and parameters)."""
    zero = {"stage": stage}
    if offload in ("optimizer", "both"):
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if offload == "both":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    cfg = {"train_batch_size": micro * world, "train_micro_batch_size_per_gpu": micro,
           "gradient_clipping": 1.0, "zero_optimization": zero,
           "optimizer": {"type": "AdamW", "params": {"lr": LR, "betas": [0.9, 0.999], "eps": 1e-8,
                                                     "weight_decay": 0.01}}}
    if dtype == "bf16":
        cfg["bf16"] = {"enabled": True}
    elif dtype == "fp16":
        # 2^8, not DeepSpeed's 2^16: a first step skipped for overflow would leave the short run flat.
        cfg["fp16"] = {"enabled": True, "initial_scale_power": 8}
    return cfg


def torch_reference(steps, device, rows=MICRO):
    """Plain torch on ``device``: the same model, data, AdamW and clipping as ds_config(); the losses."""
    import torch
    model = make_model().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    out = []
    for step in range(steps):
        x, y = batch(step, rows=rows)
        loss = loss_fn(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        out.append(loss.item())
    return out


def run_worker(script, args, env=None, timeout=90):
    """Runs ``python tests/gpu/SCRIPT ARGS`` and returns the CompletedProcess; a timeout is a test failure
    that says which worker hung (never a hang of the suite)."""
    cmd = [sys.executable, str(HERE / script), *map(str, args)]
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not finish in {timeout} s (a hang)\n--- stdout\n"
                    f"{_text(e.stdout)[-3000:]}\n--- stderr\n{_text(e.stderr)[-3000:]}")


def _text(b):
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def worker_losses(stdout):
    """The `loss <step> <value>` lines a worker prints, as {step: value}."""
    got = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "loss":
            got[int(parts[1])] = float(parts[2])
    return got


def assert_close(got, want, rel, what):
    assert len(got) == len(want), f"{what}: {len(got)} losses vs {len(want)}: {got} vs {want}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= rel * abs(w), f"{what}: step {i}: {g!r} vs torch {w!r} (rel {rel})\n{got}\n{want}"
