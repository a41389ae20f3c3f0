"""The GPU path's optimizer (ATen's fused Adam/AdamW, or tensor ops over the flat runs) run on CPU tensors.

DSRT_DEVICE_OPTIMIZER=1 makes the engine step its flat fp32 partition with the device optimizer instead of
the vectorised CPU Adam, so this suite runs on a CPU-only machine the code a GPU runs, at every ZeRO stage,
against torch.optim. Within fp32 rounding (rel 1e-5), not bit for bit: the fused kernel rounds differently
from torch's single-tensor loop.
"""

import pytest
import torch

import dsrt as deepspeed

from test_param_groups import assert_same_model, batches, decay_groups, ds_config, model_of, train_engine, train_torch


@pytest.fixture
def device_optimizer(monkeypatch):
    monkeypatch.setenv("DSRT_DEVICE_OPTIMIZER", "1")


def trained(stage, optimizer, groups=False, seed=0):
    model = model_of(seed)
    params = decay_groups(model, head_lr=0.002) if groups else model.parameters()
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=params,
                                           config=ds_config(stage, optimizer=optimizer))
    return model, train_engine(engine, batches())


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_device_adamw_with_param_groups_trains_like_torch_adamw(stage, device_optimizer):
    model, got = trained(stage, {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.5}}, groups=True)
    reference = model_of()
    ref_opt = torch.optim.AdamW(decay_groups(reference, head_lr=0.002), lr=0.01, weight_decay=0.5)
    assert got == pytest.approx(train_torch(reference, ref_opt, batches()), rel=1e-5)
    assert_same_model(model, reference)


@pytest.mark.parametrize("stage", [0, 2])
def test_device_adam_l2_and_sgd_momentum_train_like_torch(stage, device_optimizer):
    model, got = trained(stage, {"type": "Adam", "params": {"lr": 0.02, "weight_decay": 0.1, "adam_w_mode": False}},
                         seed=1)
    reference = model_of(1)
    ref_opt = torch.optim.Adam(reference.parameters(), lr=0.02, weight_decay=0.1)
    assert got == pytest.approx(train_torch(reference, ref_opt, batches()), rel=1e-5)
    assert_same_model(model, reference)

    model, got = trained(stage, {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}, seed=2)
    reference = model_of(2)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    assert got == pytest.approx(train_torch(reference, ref_opt, batches()), rel=1e-5)
    assert_same_model(model, reference)


def test_the_switch_changes_which_code_steps(monkeypatch):
    """Both paths follow torch within rounding, but they round differently: identical parameters after six
    steps would mean DSRT_DEVICE_OPTIMIZER was not read."""
    adamw = {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.5}}
    cpu_model, _ = trained(1, adamw)
    monkeypatch.setenv("DSRT_DEVICE_OPTIMIZER", "1")
    device_model, _ = trained(1, adamw)
    same = all(torch.equal(a, b) for a, b in zip(cpu_model.parameters(), device_model.parameters()))
    assert not same


def test_gloo_with_parameters_off_the_cpu_is_refused_at_initialize():
    """The engine refuses Gloo for device parameters before any collective (Gloo aborts on CUDA pointers).
    The meta device stands in for CUDA on a CPU-only machine: the check is the same for every non-CPU device."""
    model = model_of().to("meta")
    with pytest.raises(Exception, match=r"backend 'gloo' cannot move parameters on 'meta'.*nccl.*keep the model "
                                        r"on the CPU"):
        deepspeed.initialize(model=model, model_parameters=model.parameters(),
                             config=ds_config(2, optimizer={"type": "AdamW", "params": {"lr": 0.01}}))
