"""A checkpoint saved by a CUDA model loads into a CPU model and back, and training continues exactly:
GPU steps 0-2 -> save -> CPU (CUDA hidden) loads, steps 3-5 -> save -> GPU loads, steps 6-8. Every leg's
losses equal one uninterrupted torch AdamW run on the GPU within 1e-5 (fp32, TF32 off)."""

import pytest

from gpu_support import require_gpu

require_gpu()

from gpu_support import DEVICE_TYPE, assert_close, run_worker, torch_reference, worker_losses  # noqa: E402

LEG = 3


@pytest.fixture(scope="module")
def reference():
    return torch_reference(3 * LEG, DEVICE_TYPE)


def leg(device, stage, first, load, save, env=None):
    args = ["--device", device, "--stage", stage, "--first", first, "--steps", LEG]
    args += ["--load", load] if load else []
    args += ["--save", save] if save else []
    proc = run_worker("ckpt_worker.py", args, env=env)
    assert proc.returncode == 0, (f"{device} leg from step {first} exited {proc.returncode}\n--- stdout\n"
                                  f"{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
    assert f"device {device}" in proc.stdout, proc.stdout
    got = worker_losses(proc.stdout)
    assert sorted(got) == list(range(first, first + LEG)), f"{device} leg printed steps {sorted(got)}"
    return [got[s] for s in sorted(got)]


@pytest.mark.parametrize("stage", [2, 3])
def test_a_gpu_checkpoint_continues_on_the_cpu_and_back_on_the_gpu(tmp_path, reference, stage):
    gpu_ckpt, cpu_ckpt = tmp_path / "from_gpu", tmp_path / "from_cpu"
    first = leg(DEVICE_TYPE, stage, 0, None, gpu_ckpt)
    # CUDA_VISIBLE_DEVICES="" hides the GPU: the CPU leg is what a CPU-only machine would do.
    second = leg("cpu", stage, LEG, gpu_ckpt, cpu_ckpt, env={"CUDA_VISIBLE_DEVICES": ""})
    third = leg(DEVICE_TYPE, stage, 2 * LEG, cpu_ckpt, None)
    assert_close(first, reference[:LEG], 1e-5, "GPU leg")
    assert_close(second, reference[LEG:2 * LEG], 1e-5, "CPU leg (loaded the GPU checkpoint)")
    assert_close(third, reference[2 * LEG:], 1e-5, "GPU leg (loaded the CPU checkpoint)")
