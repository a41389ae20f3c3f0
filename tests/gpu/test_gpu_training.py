"""dsrt on one GPU against plain torch on the same GPU: every ZeRO stage x fp32/bf16/fp16 x offload.

fp32 (TF32 off): dsrt's per-step losses equal torch AdamW's within 1e-5 relative. bf16/fp16: the loss
tracks fp32 torch's within a loose bound and falls. Each case also checks the engine really ran where and
how it was asked (parameters on the GPU, in the requested dtype), so a silent CPU or fp32 run fails.
"""

import pytest

from gpu_support import require_gpu

require_gpu()

import torch  # noqa: E402

import dsrt as deepspeed  # noqa: E402
from gpu_support import DEVICE_TYPE, assert_close, batch, ds_config, loss_fn, make_model, torch_reference  # noqa: E402

STEPS = 6
DEVICE = torch.device("cuda", 0) if DEVICE_TYPE == "cuda" else torch.device("cpu")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# (stage, offload): every stage on the GPU, and the two offload layouts DeepSpeed users run.
LAYOUTS = [(0, None), (1, None), (2, None), (3, None), (2, "optimizer"), (3, "both")]
# bf16 keeps 8 mantissa bits, fp16 11: a few steps of a small MLP stay well inside these.
TRACK_REL = {"bf16": 5e-2, "fp16": 2e-2}


def _cpu_fp16_matmul():
    try:
        torch.ones(2, 2, dtype=torch.float16) @ torch.ones(2, 2, dtype=torch.float16)
        return True
    except RuntimeError:
        return False


@pytest.fixture(scope="module")
def reference():
    return torch_reference(STEPS, DEVICE)


def train_dsrt(stage, dtype, offload):
    model = make_model().to(DEVICE)
    engine, _, _, _ = deepspeed.initialize(model=model, config=ds_config(stage, dtype, offload))
    assert engine.zero_optimization_stage() == stage
    assert engine.device == DEVICE, f"engine device {engine.device}, model was on {DEVICE}"
    if offload != "both":  # offload_param may keep stage 3's partitions in host memory between uses
        for name, p in model.named_parameters():
            assert p.device == DEVICE and p.dtype == DTYPES[dtype], f"{name}: {p.dtype} on {p.device}"
    if offload is not None:
        assert engine.offloaded_state_bytes() > 0, "offload asked for, but no optimizer state in host memory"
    losses = []
    for step in range(STEPS):
        x, y = batch(step)
        out = engine(x.to(DEVICE, DTYPES[dtype]))
        assert out.device.type == DEVICE.type, f"forward ran on {out.device}"
        loss = loss_fn(out, y.to(DEVICE))
        engine.backward(loss)
        engine.step()
        losses.append(loss.item())
    assert engine.global_steps == STEPS
    return losses, engine


@pytest.mark.parametrize("stage,offload", LAYOUTS, ids=[f"stage{s}-{o or 'gpu'}" for s, o in LAYOUTS])
def test_fp32_losses_equal_torch_adamw_on_the_same_gpu(reference, stage, offload):
    losses, _ = train_dsrt(stage, "fp32", offload)
    assert_close(losses, reference, 1e-5, f"stage {stage} offload {offload} fp32")


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("stage,offload", LAYOUTS, ids=[f"stage{s}-{o or 'gpu'}" for s, o in LAYOUTS])
def test_16bit_loss_tracks_fp32_torch_and_falls(reference, stage, offload, dtype):
    if dtype == "fp16" and DEVICE.type == "cpu" and not _cpu_fp16_matmul():
        pytest.skip(f"harness check on the CPU: torch {torch.__version__} has no fp16 matmul on the CPU")
    losses, engine = train_dsrt(stage, dtype, offload)
    # ds_config's loss scale (2^8) leaves this model's fp16 gradients finite: a skipped step is a bug here.
    assert engine.skipped_steps == 0, f"{dtype} skipped {engine.skipped_steps} of {STEPS} steps"
    assert_close(losses, reference, TRACK_REL[dtype], f"stage {stage} offload {offload} {dtype} vs fp32 torch")
    assert losses[-1] < 0.9 * losses[0], f"{dtype} loss did not fall: {losses}"
