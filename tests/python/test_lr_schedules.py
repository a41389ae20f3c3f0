"""deepspeed.runtime.lr_schedules built by the script: the same lr (and OneCycle betas) sequence, and the
same training, as the config's "scheduler" block; DeepSpeed's step/get_last_lr/state_dict. One process."""

import pytest
import torch

import dsrt as deepspeed
from dsrt.runtime import lr_schedules

STEPS = 8

CASES = {
    "WarmupLR": {"warmup_min_lr": 0.001, "warmup_max_lr": 0.01, "warmup_num_steps": 5, "warmup_type": "linear"},
    "WarmupDecayLR": {"total_num_steps": STEPS, "warmup_max_lr": 0.02, "warmup_num_steps": 3},
    "WarmupCosineLR": {"total_num_steps": STEPS, "warmup_num_steps": 3, "warmup_min_ratio": 0.1},
    "OneCycle": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_first_step_size": 3, "decay_lr_rate": 0.1,
                 "decay_step_size": 2},
    "LRRangeTest": {"lr_range_test_min_lr": 0.001, "lr_range_test_step_size": 2, "lr_range_test_step_rate": 2.0},
}


def model_of(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def run(engine):
    gen = torch.Generator().manual_seed(4)
    trace = []
    for _ in range(STEPS):
        loss = engine(torch.randn(4, 8, generator=gen)).pow(2).mean()
        engine.backward(loss)
        engine.step()
        trace.append((engine.get_lr()[0], engine.optimizer.param_groups[0].get("betas")))
    return trace


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_script_built_scheduler_equals_the_config_block(kind):
    opt = {"type": "AdamW", "params": {"lr": 0.01, "betas": [0.9, 0.999]}}
    from_config, _, _, _ = deepspeed.initialize(model=model_of(), config={
        "train_batch_size": 4, "optimizer": opt, "scheduler": {"type": kind, "params": CASES[kind]}})
    model = model_of()
    client = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.0)  # the config's AdamW default
    sched = getattr(lr_schedules, kind)(client, **CASES[kind])
    built, _, _, returned = deepspeed.initialize(model=model, optimizer=client, lr_scheduler=sched,
                                                 config={"train_batch_size": 4})
    assert returned is sched
    want, got = run(from_config), run(built)
    assert [lr for lr, _ in got] == pytest.approx([lr for lr, _ in want], rel=1e-12)
    if kind == "OneCycle":  # the momentum cycles through the group's betas; the weights below show the
        assert len({b for _, b in got}) > 1  # engine stepped with the same betas as its own OneCycle
    for p, q in zip(model.parameters(), from_config.module.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-6, atol=1e-7)
    assert sched.state_dict() == {"last_batch_iteration": STEPS - 1}


def test_warmup_lr_behaves_as_deepspeeds_object():
    model = model_of()
    opt = torch.optim.SGD([{"params": [model[0].weight]}, {"params": list(model.parameters())[1:]}], lr=0.5)
    sched = lr_schedules.WarmupLR(opt, warmup_min_lr=[0.0, 0.1], warmup_max_lr=[1.0, 0.2], warmup_num_steps=4,
                                  warmup_type="linear")
    assert [g["lr"] for g in opt.param_groups] == [0.0, 0.1]  # set when built, as DeepSpeed's
    with pytest.raises(AssertionError, match="need to call step"):
        sched.get_last_lr()
    sched.step()
    sched.step()
    assert sched.get_last_lr() == pytest.approx([0.25, 0.125])  # linear: min + (max - min) * k / steps
    state = sched.state_dict()
    other = lr_schedules.WarmupLR(opt, warmup_min_lr=[0.0, 0.1], warmup_max_lr=[1.0, 0.2], warmup_num_steps=4,
                                  warmup_type="linear")
    other.load_state_dict(state)
    other.step()
    assert other.get_last_lr() == pytest.approx([0.5, 0.15])


def test_bad_arguments_raise_the_configs_errors():
    opt = torch.optim.SGD(model_of().parameters(), lr=0.1)
    with pytest.raises(ValueError, match="total_num_steps"):
        lr_schedules.WarmupCosineLR(opt, total_num_steps=5, warmup_num_steps=5)
    with pytest.raises(ValueError, match="warmup_type"):
        lr_schedules.WarmupLR(opt, warmup_type="cubic")


@pytest.mark.parametrize("kind", sorted(CASES))
def test_the_engines_scheduler_is_an_instance_of_the_config_blocks_class(kind):
    """DeepSpeed's engine builds the block's class (isinstance(lr_scheduler, WarmupLR) in its tests; Accelerate
    checks type(scheduler).__name__ against VALID_LR_SCHEDULES); last_batch_iteration counts the steps taken."""
    model = model_of()
    cfg = {"train_batch_size": 4, "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
           "scheduler": {"type": kind, "params": CASES[kind]}}
    engine, _, _, scheduler = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    assert isinstance(scheduler, getattr(lr_schedules, kind)) and type(scheduler).__name__ == kind
    assert type(scheduler).__name__ in lr_schedules.VALID_LR_SCHEDULES
    assert scheduler.last_batch_iteration == -1
    run(engine)
    assert scheduler.last_batch_iteration == STEPS - 1
    assert scheduler.get_last_lr() == [engine.get_lr()[0]]
