"""Parameter groups and client LR schedulers, as DeepSpeed scripts use them (one process, a world of one).

Hugging Face's Trainer, DeepSpeed-Chat and most fine-tuning scripts pass param groups that exempt biases
and norms from weight decay, give some groups their own lr, and step a torch/transformers scheduler that
the engine drives. Each case is compared with plain torch doing the same.
"""

import warnings

import pytest
import torch

import dsrt
import dsrt as deepspeed

STEPS = 6


def model_of(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 4))


def decay_groups(model, weight_decay=0.1, head_lr=None):
    """Hugging Face's grouping: no decay for biases and LayerNorm weights; optionally an lr of its own
    for the last layer (as DeepSpeed-Chat does for LoRA weights)."""
    decay, no_decay, head = [], [], []
    for name, p in model.named_parameters():
        if head_lr is not None and name.startswith("3."):
            head.append(p)
        elif name.endswith("bias") or name.startswith("1."):
            no_decay.append(p)
        else:
            decay.append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    if head_lr is not None:
        groups.append({"params": head, "weight_decay": weight_decay, "lr": head_lr})
    return groups


def batches(seed=3):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(4, 8, generator=gen) for _ in range(STEPS)]


def ds_config(stage=0, **extra):
    cfg = {"train_batch_size": 4, "zero_optimization": {"stage": stage}}
    cfg.update(extra)
    return cfg


def train_engine(engine, data):
    out = []
    for x in data:
        loss = engine(x).pow(2).mean()
        engine.backward(loss)
        engine.step()
        out.append(loss.item())
    return out


def train_torch(model, optimizer, data, scheduler=None):
    out = []
    for x in data:
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        out.append(loss.item())
    return out


def assert_same_model(a, b):
    for (n, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6, msg=n)


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_model_parameter_groups_with_their_own_weight_decay_and_lr_train_like_torch_adamw(stage):
    model, reference = model_of(), model_of()
    cfg = ds_config(stage, optimizer={"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.5}})
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=decay_groups(model, head_lr=0.002),
                                                   config=cfg)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0, 0.1]
    assert [g["lr"] for g in optimizer.param_groups] == [0.01, 0.01, 0.002]
    assert engine.get_lr() == [0.01, 0.01, 0.002]
    ref_opt = torch.optim.AdamW(decay_groups(reference, head_lr=0.002), lr=0.01, weight_decay=0.5)
    assert train_engine(engine, batches()) == pytest.approx(train_torch(reference, ref_opt, batches()), rel=1e-5)
    assert_same_model(model, reference)


def test_a_client_adamw_with_groups_and_a_client_scheduler_train_like_torch():
    model, reference = model_of(1), model_of(1)
    client = torch.optim.AdamW(decay_groups(model), lr=0.02, betas=(0.9, 0.99))
    sched = torch.optim.lr_scheduler.LambdaLR(client, lambda step: 1.0 / (1 + step))
    engine, optimizer, _, scheduler = deepspeed.initialize(model=model, optimizer=client, lr_scheduler=sched,
                                                           config=ds_config(2))
    assert scheduler is sched
    assert optimizer.param_groups is client.param_groups
    ref_opt = torch.optim.AdamW(decay_groups(reference), lr=0.02, betas=(0.9, 0.99))
    ref_sched = torch.optim.lr_scheduler.LambdaLR(ref_opt, lambda step: 1.0 / (1 + step))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "lr_scheduler.step() before optimizer.step()" warning
        got = train_engine(engine, batches())
    assert got == pytest.approx(train_torch(reference, ref_opt, batches(), ref_sched), rel=1e-5)
    assert_same_model(model, reference)
    assert engine.get_lr() == pytest.approx(ref_sched.get_last_lr())
    assert sched.last_epoch == STEPS


def test_a_scheduler_factory_gets_the_engine_optimizer_as_a_torch_optimizer():
    model, reference = model_of(2), model_of(2)
    cfg = ds_config(1, optimizer={"type": "Adam", "params": {"lr": 0.05, "adam_w_mode": False}})
    engine, optimizer, _, scheduler = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=cfg,
        lr_scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5))
    assert isinstance(optimizer, torch.optim.Optimizer)
    assert scheduler.optimizer is optimizer
    ref_opt = torch.optim.Adam(reference.parameters(), lr=0.05)
    ref_sched = torch.optim.lr_scheduler.StepLR(ref_opt, step_size=2, gamma=0.5)
    assert train_engine(engine, batches()) == pytest.approx(train_torch(reference, ref_opt, batches(), ref_sched),
                                                            rel=1e-5)
    assert_same_model(model, reference)
    assert engine.get_lr() == [0.05 * 0.5 ** (STEPS // 2)]


def test_a_script_setting_the_group_lr_by_hand_moves_the_engine_lr():
    model, reference = model_of(3), model_of(3)
    engine, optimizer, _, _ = deepspeed.initialize(
        model=model, config=ds_config(2, optimizer={"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}))
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for i, x in enumerate(batches()):
        for opt in (optimizer, ref_opt):
            for group in opt.param_groups:
                group["lr"] = 0.1 / (i + 1)
        loss = engine(x).pow(2).mean()
        engine.backward(loss)
        engine.step()
        ref_opt.zero_grad()
        reference(x).pow(2).mean().backward()
        ref_opt.step()
    assert_same_model(model, reference)


def test_a_config_scheduler_writes_its_lr_into_every_group_and_wins_over_a_client_one():
    model = model_of()
    cfg = ds_config(0, optimizer={"type": "AdamW", "params": {"lr": 0.01}},
                    scheduler={"type": "WarmupLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 0.01,
                                                              "warmup_num_steps": 4, "warmup_type": "linear"}})
    client_sched = lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=1)  # noqa: E731
    engine, optimizer, _, scheduler = deepspeed.initialize(model=model, model_parameters=decay_groups(model),
                                                           config=cfg, lr_scheduler=client_sched)
    assert not isinstance(scheduler, torch.optim.lr_scheduler.StepLR)
    train_engine(engine, batches()[:2])
    lr = engine._engine.get_lr()
    assert 0 < lr < 0.01
    assert engine.get_lr() == [lr, lr] == [g["lr"] for g in optimizer.param_groups]
    assert scheduler.get_last_lr() == [lr, lr]


def test_a_client_scheduler_and_the_groups_resume_from_a_checkpoint(tmp_path):
    def make(seed):
        model = model_of(seed)
        client = torch.optim.AdamW(decay_groups(model, head_lr=0.004), lr=0.02)
        sched = torch.optim.lr_scheduler.LambdaLR(client, lambda step: 0.9 ** step)
        engine, _, _, _ = deepspeed.initialize(model=model, optimizer=client, lr_scheduler=sched,
                                               config=ds_config(2))
        return model, engine, sched

    data = batches()
    whole_model, whole, _ = make(4)
    expected = train_engine(whole, data)

    model, engine, _ = make(4)
    train_engine(engine, data[:3])
    engine.save_checkpoint(tmp_path, client_state={"epoch": 1})
    model2, engine2, sched2 = make(9)
    path, client_state = engine2.load_checkpoint(tmp_path)
    assert client_state == {"epoch": 1}
    assert sched2.last_epoch == 3
    assert engine2.get_lr() == pytest.approx([0.02 * 0.9 ** 3, 0.02 * 0.9 ** 3, 0.004 * 0.9 ** 3])
    assert train_engine(engine2, data[3:]) == pytest.approx(expected[3:], rel=1e-5)
    assert_same_model(model2, whole_model)


def test_group_settings_dsrt_cannot_vary_per_group_are_refused_naming_the_group():
    model = model_of()
    groups = [{"params": [model[0].weight], "momentum": 0.5}, {"params": [p for p in model.parameters()][1:]}]
    cfg = ds_config(0, optimizer={"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}})
    with pytest.raises(dsrt.DsrtError, match="parameter group 0 sets momentum=0.5"):
        deepspeed.initialize(model=model, model_parameters=groups, config=cfg)
    client = torch.optim.SGD([{"params": [model[0].weight], "nesterov": True, "momentum": 0.9},
                              {"params": list(model.parameters())[1:]}], lr=0.1, momentum=0.9)
    with pytest.raises(dsrt.DsrtError, match="parameter group 0 sets nesterov=True"):
        deepspeed.initialize(model=model, optimizer=client, config=ds_config(0))
    with pytest.raises(dsrt.DsrtError, match="group 1 has no 'params' \\(keys: weight_decay\\)"):
        deepspeed.initialize(model=model, model_parameters=[{"params": [model[0].weight]}, {"weight_decay": 0.0}],
                             config=cfg)
