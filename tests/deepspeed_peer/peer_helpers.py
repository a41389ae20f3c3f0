"""Runs peer_train.py under real DeepSpeed and under dsrt, and the ds_configs both get.

DeepSpeed's ranks start through torch's own launcher (`python -m torch.distributed.run`, i.e. torchrun) with
its CPU accelerator (DS_ACCELERATOR=cpu) and Gloo; dsrt's through `dsrun --num_gpus N`. The DeepSpeed
interpreter is DSRT_DEEPSPEED_PYTHON, else the one running the tests (CTest: the interpreter dsrt was built
for, which then imports both packages, as scripts/setup_torch2_env.sh's venv does).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from conftest import REPO, free_port, losses, run_dsrun  # noqa: E402,F401  (tests/python/conftest.py)

SCRIPT = REPO / "tests" / "deepspeed_peer" / "peer_train.py"
DS_PYTHON = os.environ.get("DSRT_DEEPSPEED_PYTHON", sys.executable)

# Relative tolerance per step's loss; why: test_deepspeed_peer.py's docstring.
TOL = 2e-5

# The variants every test walks: (ZeRO stage, offload_optimizer, offload_param).
VARIANTS = {"z0": (0, False, False), "z1": (1, False, False), "z2": (2, False, False), "z3": (3, False, False),
            "z2_offload": (2, True, False), "z3_offload": (3, True, True)}


def ds_config(variant, world, micro_per_global=16, gas=2):
    """The run's ds_config: the same global batch (16 samples per step, 2 micro-batches) at every world size."""
    stage, offload_opt, offload_param = VARIANTS[variant]
    zero = {"stage": stage, "reduce_bucket_size": 2000, "allgather_bucket_size": 2000,
            "stage3_param_persistence_threshold": 16, "stage3_prefetch_bucket_size": 2000}
    if offload_opt:
        zero["offload_optimizer"] = {"device": "cpu"}
    if offload_param:
        zero["offload_param"] = {"device": "cpu"}
    # Without offload DeepSpeed's config Adam is its FusedAdam, a CUDA kernel: torch_adam makes it
    # torch.optim.AdamW. With offload_optimizer it is DeepSpeedCPUAdam (JIT-built C++), which is the point.
    adam = {"lr": 0.01, "betas": [0.9, 0.98], "eps": 1e-8, "weight_decay": 0.1}
    if not offload_opt:
        adam["torch_adam"] = True
    return {"train_batch_size": micro_per_global, "gradient_accumulation_steps": gas,
            "train_micro_batch_size_per_gpu": micro_per_global // (gas * world),
            "gradient_clipping": 0.5, "steps_per_print": 1000000,
            "optimizer": {"type": "AdamW", "params": adam},
            "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.001, "warmup_max_lr": 0.01,
                                                          "warmup_num_steps": 3, "warmup_type": "linear"}},
            "zero_optimization": zero}


def write_config(tmp_path, name, cfg):
    """cfg as TMP_PATH/NAME.json; returns its path."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return path


def require_deepspeed():
    """Fails (never skips) when DeepSpeed cannot be imported: the comparison is the point of the suite."""
    proc = subprocess.run([DS_PYTHON, "-c", "import deepspeed, torch; print(deepspeed.__version__, torch.__version__)"],
                          capture_output=True, text=True, env=dict(os.environ, DS_ACCELERATOR="cpu"))
    if proc.returncode != 0:
        pytest.fail(f"{DS_PYTHON} cannot import deepspeed (set DSRT_DEEPSPEED_PYTHON, or run "
                    f"scripts/setup_torch2_env.sh):\n{proc.stderr[-2000:]}")
    return proc.stdout.split()[-2:]


def run_deepspeed(nproc, *args, timeout=900):
    """peer_train.py --impl deepspeed on NPROC ranks (torchrun); returns the CompletedProcess."""
    cmd = [DS_PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--master_port", str(free_port()), str(SCRIPT), "--impl", "deepspeed", *map(str, args)]
    env = dict(os.environ, DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)  # DeepSpeed's run must not see dsrt's build (it shadows nothing, but be sure)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n"
                    f"--- stderr\n{proc.stderr[-5000:]}")
    return proc


def run_dsrt(nproc, *args, timeout=600, expect_rc=0):
    return run_dsrun(nproc, SCRIPT, "--impl", "dsrt", *args, timeout=timeout, expect_rc=expect_rc)


def max_rel_diff(got, want):
    assert len(got) == len(want) and want, f"{len(got)} losses vs {len(want)}"
    return max(abs(g - w) / max(abs(w), 1e-12) for g, w in zip(got, want))
