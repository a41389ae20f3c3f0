"""Host synchronisation in a GPU step, and ZeRO-3 offload_param with prefetch (docs/gpu.md "Host
synchronisation in a step").

``torch.cuda.set_sync_debug_mode("error")`` makes every synchronising CUDA call torch knows of raise: a blocking
device<->host copy, ``.item()``, a stream or device synchronize. Under it:
- forward and backward of every stage and offload layout, fp32 and bf16, with gradient accumulation, must not
  synchronise: reductions wait on streams, offload's gradient downloads and offload_param's prefetch uploads
  run on side streams (DeepSpeed's stage 1/2 even synchronise the device after backward with overlap_comm);
- the optimizer step of stages 0-3 on the GPU (no offload) must not either when nothing needs a host value:
  no fp16 overflow check and no gradient clipping, the two places DeepSpeed reads the device.
The offloaded step is not checked: CPU Adam must wait for the gradients in host memory (DeepSpeed's step
waits for its offload copies too).

ZeRO-3 with offload_param on a model of 6 layers (persistence threshold 0, so every layer is gathered and the
later ones prefetched while the earlier ones compute), gradient accumulation 2: fp32 losses equal torch AdamW's
within 1e-5 relative. test_gpu_training.py's MLP is below DeepSpeed's persistence threshold and never gathers.
"""

import contextlib

import pytest

from gpu_support import require_gpu

require_gpu()

import torch  # noqa: E402

import dsrt as deepspeed  # noqa: E402
from gpu_support import DEVICE_TYPE, LR, assert_close, batch, ds_config, loss_fn, make_model  # noqa: E402

DEVICE = torch.device("cuda", 0) if DEVICE_TYPE == "cuda" else torch.device("cpu")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
GAS = 2
LAYOUTS = [(0, None), (1, None), (2, None), (3, None), (1, "optimizer"), (2, "optimizer"), (3, "optimizer"),
           (3, "both")]
WIDTH, DEPTH = 64, 6


@contextlib.contextmanager
def no_host_sync(what):
    """Raises (naming `what`) when the block synchronises the host with the GPU; on the CPU harness, nothing."""
    if DEVICE.type != "cuda":
        yield
        return
    torch.cuda.synchronize()  # what ran before is not this block's business
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    except RuntimeError as e:
        raise AssertionError(f"{what} synchronised the host with the GPU: {e}") from e
    finally:
        torch.cuda.set_sync_debug_mode("default")


def config(stage, dtype, offload, clipping):
    cfg = ds_config(stage, dtype, offload, micro=4)
    cfg["train_batch_size"] = 4 * GAS
    cfg["gradient_accumulation_steps"] = GAS
    cfg["gradient_clipping"] = clipping
    cfg["zero_optimization"]["stage3_param_persistence_threshold"] = 0  # stage 3 gathers every layer
    return cfg


def micro_batches(step, dtype):
    """The GAS micro-batches of `step`, already on the device: moving pageable memory up would synchronise."""
    out = []
    for m in range(GAS):
        x, y = batch(step, rows=4, first_row=4 * m)
        out.append((x.to(DEVICE, DTYPES[dtype]), y.to(DEVICE)))
    return out


def train_step(engine, step, dtype, check_backward, check_step):
    parts = micro_batches(step, dtype)
    for m, (x, y) in enumerate(parts):
        what = f"micro-step {m} of step {step}: forward and backward"
        with no_host_sync(what) if check_backward else contextlib.nullcontext():
            loss = loss_fn(engine(x), y)
            engine.backward(loss)
        boundary = m == len(parts) - 1
        with no_host_sync(f"step {step}: engine.step()") if check_step and boundary else contextlib.nullcontext():
            engine.step()


# fp16's backward differs only by the loss-scale multiply; its step reads the overflow flag (DeepSpeed's too).
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("stage,offload", LAYOUTS, ids=[f"stage{s}-{o or 'gpu'}" for s, o in LAYOUTS])
def test_forward_and_backward_never_wait_on_the_host(stage, offload, dtype):
    engine, _, _, _ = deepspeed.initialize(model=make_model().to(DEVICE), config=config(stage, dtype, offload, 1.0))
    # The first steps record stage 3's fetch trace and allocate the pooled buffers; then two checked steps
    # (the second replays the trace with prefetch).
    for step in range(4):
        train_step(engine, step, dtype, check_backward=step >= 2, check_step=False)
    assert engine.global_steps == 4


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_a_step_without_clipping_or_fp16_never_waits_on_the_host(stage, dtype):
    engine, _, _, _ = deepspeed.initialize(model=make_model().to(DEVICE), config=config(stage, dtype, None, 0.0))
    for step in range(4):
        train_step(engine, step, dtype, check_backward=step >= 2, check_step=step >= 2)
    assert engine.global_steps == 4


def make_deep_model():
    torch.manual_seed(5)
    layers = [torch.nn.Linear(32, WIDTH)]
    for _ in range(DEPTH - 2):
        layers += [torch.nn.GELU(), torch.nn.Linear(WIDTH, WIDTH)]
    layers += [torch.nn.GELU(), torch.nn.Linear(WIDTH, 16)]
    return torch.nn.Sequential(*layers)


def test_stage3_offload_param_with_prefetch_equals_torch_adamw():
    steps = 4
    model = make_deep_model().to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    want = []
    for step in range(steps):
        opt.zero_grad()
        total = 0.0
        for x, y in micro_batches(step, "fp32"):
            loss = loss_fn(model(x), y)
            (loss / GAS).backward()
            total += loss.item() / GAS
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        want.append(total)
    assert want[-1] < want[0], f"torch's reference did not train: {want}"

    cfg = config(3, "fp32", "both", 1.0)
    engine, _, _, _ = deepspeed.initialize(model=make_deep_model().to(DEVICE), config=cfg)
    assert engine.offloaded_state_bytes() > 0, "offload asked for, but nothing in host memory"
    got = []
    for step in range(steps):
        total = 0.0
        for x, y in micro_batches(step, "fp32"):
            loss = loss_fn(engine(x), y)
            engine.backward(loss)
            engine.step()
            total += loss.item() / GAS
        got.append(total)
    assert_close(got, want, 1e-5, f"stage 3 offload_param, {DEPTH} gathered layers, gas {GAS}, fp32")
