"""Shared fixtures of the dsrt Python tests. CTest passes DSRT_BUILD_DIR; PYTHONPATH holds <build>/python."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("DSRT_BUILD_DIR", REPO / "build"))
DSRUN = BUILD / "launcher" / "dsrun"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_dsrun(nproc, script, *args, timeout=600, expect_rc=0, env=None, python=sys.executable):
    """Runs `dsrun --num_gpus NPROC SCRIPT ARGS` on this machine (python=None: --no_python); returns the
    CompletedProcess, failing the test with both outputs when the exit code is not ``expect_rc``."""
    if not DSRUN.exists():
        pytest.fail(f"{DSRUN} not built")
    # --master_port 0: dsrun picks a free port just before the ranks start; one picked here could be taken by then
    interpreter = ["--no_python"] if python is None else ["--python", python]
    cmd = [str(DSRUN), "--num_gpus", str(nproc), "--master_port", "0", *interpreter,
           str(script), *map(str, args)]
    full_env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=REPO)
    if expect_rc is not None and proc.returncode != expect_rc:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}, expected {expect_rc}\n"
                    f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")
    return proc


def losses(stdout: str):
    """The `step N loss X` lines of rank 0, as floats in step order."""
    out = []
    for line in stdout.splitlines():
        parts = line.split()
        if "step" in parts and "loss" in parts:
            i = parts.index("loss")
            out.append(float(parts[i + 1]))
    return out


def assert_close_lists(got, want, rel=1e-5, what="losses"):
    assert len(got) == len(want), f"{what}: {len(got)} values vs {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= rel * max(abs(w), 1e-12), f"{what}[{i}]: {g!r} vs {w!r} (rel {rel})"


def assert_close_tensors(got: dict, want: dict, rel=1e-5, what="parameters"):
    """Every tensor of ``want`` is in ``got`` with ||got - want|| <= rel * ||want||. Relative to the tensor's
    norm, not per element: Adam turns the float noise of an element whose gradient nearly cancels into a
    step-sized difference of that element alone (the sum order differs between world sizes)."""
    assert got.keys() == want.keys(), f"{what}: names differ: {sorted(got)} vs {sorted(want)}"
    for name, w in want.items():
        g = got[name]
        assert g.shape == w.shape, f"{what}: {name}: shape {tuple(g.shape)} vs {tuple(w.shape)}"
        err, norm = (g.double() - w.double()).norm().item(), w.double().norm().item()
        assert err <= rel * max(norm, 1e-12), f"{what}: {name}: ||diff|| {err:.3g} vs ||want|| {norm:.3g}"


@pytest.fixture
def write_config(tmp_path):
    """write_config(dict) -> path of a ds_config JSON file in the test's temporary directory."""
    import json
    counter = [0]

    def write(cfg):
        counter[0] += 1
        path = tmp_path / f"ds_config_{counter[0]}.json"
        path.write_text(json.dumps(cfg))
        return path

    return write


def cpu_half_matmul_error():
    """torch's error for a float16 matrix multiply on the CPU (Debian's torch 1.13 has none), or None."""
    half = torch.ones(1, 1, dtype=torch.half)
    try:
        torch.addmm(half, half, half)
        return None
    except RuntimeError as e:
        return str(e).splitlines()[0]


# fp16 on a CPU torch without float16 kernels is refused at initialize (whatever the model computes), so the
# fp16 engine tests run where torch has them: torch 2's leg (scripts/run_tests_torch2.sh).
needs_cpu_half_matmul = pytest.mark.skipif(
    cpu_half_matmul_error() is not None,
    reason=f"fp16 is refused on this torch's CPU ({cpu_half_matmul_error()}): checked in the torch 2 leg")


class HalfSafeLinear(torch.nn.Module):
    """fp16 weights, computed in fp32 (as a model must where CPU LibTorch has no fp16 matmul)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.nn.functional.linear(x.float(), self.lin.weight.float(), self.lin.bias.float())
