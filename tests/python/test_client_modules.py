"""The modules DeepSpeed scripts reach through ``deepspeed.``: comm (torch.distributed's names), ops.adam
(FusedAdam, DeepSpeedCPUAdam), checkpointing (activation checkpointing) and accelerator. One process."""

import pytest
import torch
import torch.distributed as dist

import dsrt as deepspeed

STEPS = 5


class Block(torch.nn.Module):
    def __init__(self, checkpointed):
        super().__init__()
        self.checkpointed = checkpointed
        self.fc1, self.fc2 = torch.nn.Linear(8, 32), torch.nn.Linear(32, 8)
        self.drop = torch.nn.Dropout(0.2)

    def inner(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))

    def forward(self, x):
        if self.checkpointed:
            return x + deepspeed.checkpointing.checkpoint(self.inner, x)
        return x + self.inner(x)


def model_of(checkpointed=False, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(Block(checkpointed), Block(checkpointed), torch.nn.Linear(8, 2))


def batches():
    # Inputs that require grad: a reentrant checkpoint (DeepSpeed's and torch's) whose inputs do not would
    # give its parameters no gradient.
    gen = torch.Generator().manual_seed(9)
    return [torch.randn(4, 8, generator=gen).requires_grad_() for _ in range(STEPS)]


def groups_of(model):
    return [{"params": [p for n, p in model.named_parameters() if not n.endswith("bias")], "weight_decay": 0.1},
            {"params": [p for n, p in model.named_parameters() if n.endswith("bias")], "weight_decay": 0.0}]


def train_engine(engine, seed=0):
    torch.manual_seed(seed)  # the dropout masks
    out = []
    for x in batches():
        loss = engine(x).pow(2).mean()
        engine.backward(loss)
        engine.step()
        out.append(loss.item())
    return out


def train_torch(model, optimizer, seed=0):
    torch.manual_seed(seed)
    out = []
    for x in batches():
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    return out


def test_comm_has_torch_distributed_names_on_the_engine_group():
    deepspeed.init_distributed()
    assert deepspeed.comm.ReduceOp.SUM == dist.ReduceOp.SUM
    assert deepspeed.comm.get_backend() == dist.get_backend()
    t = torch.ones(3)
    deepspeed.comm.reduce(t, dst=0)
    assert torch.equal(t, torch.ones(3))
    with pytest.raises(AttributeError, match="no attribute 'no_such_call'"):
        deepspeed.comm.no_such_call


@pytest.mark.parametrize("adam_w_mode", [True, False])
def test_fused_adam_on_its_own_steps_like_torch_adamw_or_adam(adam_w_mode):
    model, reference = model_of(), model_of()
    opt = deepspeed.ops.adam.FusedAdam(groups_of(model), lr=0.01, adam_w_mode=adam_w_mode)
    ref = (torch.optim.AdamW if adam_w_mode else torch.optim.Adam)(groups_of(reference), lr=0.01)
    assert train_torch(model, opt) == pytest.approx(train_torch(reference, ref), rel=1e-5)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,stage,offload", [("FusedAdam", 2, False), ("DeepSpeedCPUAdam", 2, True),
                                               ("DeepSpeedCPUAdam", 3, True)])
def test_a_deepspeed_ops_optimizer_passed_to_initialize_is_stepped_by_the_engine(cls, stage, offload):
    model, reference = model_of(), model_of()
    make = getattr(deepspeed.ops.adam, cls)
    kwargs = {"bias_correction": False, "betas": (0.8, 0.99)}
    zero = {"stage": stage}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu"}
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=make(groups_of(model), lr=0.02, **kwargs),
                                           config={"train_batch_size": 4, "zero_optimization": zero})
    # The same class stepping in plain torch is the reference (no bias correction, AdamW rule).
    ref = make(groups_of(reference), lr=0.02, **kwargs)
    assert train_engine(engine) == pytest.approx(train_torch(reference, ref), rel=1e-5)
    for (n, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6, msg=n)


@pytest.mark.parametrize("stage", [0, 2, 3])
def test_activation_checkpointing_trains_exactly_like_the_plain_model(stage):
    cfg = {"train_batch_size": 4, "zero_optimization": {"stage": stage},
           "optimizer": {"type": "AdamW", "params": {"lr": 0.01}}}
    deepspeed.checkpointing.configure(None, checkpoint_in_cpu=False)
    assert deepspeed.checkpointing.is_configured()
    plain, _, _, _ = deepspeed.initialize(model=model_of(False), config=cfg)
    ckpt_model = model_of(True)
    ckpt, _, _, _ = deepspeed.initialize(model=ckpt_model, config=cfg)
    assert train_engine(ckpt) == pytest.approx(train_engine(plain), rel=1e-5)
    for p, q in zip(ckpt_model.parameters(), plain.module.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6)


def test_checkpointing_options_dsrt_does_not_build_are_named_once():
    with pytest.warns(UserWarning, match="partition_activations, checkpoint_in_cpu have no effect"):
        deepspeed.checkpointing.configure(None, partition_activations=True, checkpoint_in_cpu=True)
    with pytest.raises(RuntimeError, match="model parallelism"):
        deepspeed.checkpointing.configure(object())


def test_get_accelerator_describes_this_machine():
    acc = deepspeed.accelerator.get_accelerator()
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert acc.device_name() == expected and acc.communication_backend_name() in ("nccl", "gloo")
    assert acc.device_count() >= 1 and acc.is_available()
    acc.manual_seed(3)
    a = torch.rand(2)
    acc.manual_seed(3)
    assert torch.equal(a, torch.rand(2))
    assert torch.zeros(1, device=acc.current_device_name()).device.type == expected
