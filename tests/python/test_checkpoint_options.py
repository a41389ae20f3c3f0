"""DeepSpeed's partial checkpoint options in one process (a world of one): load_module_only,
load_optimizer_states, load_lr_scheduler_states, load_module_strict, save_latest, custom_load_fn and
exclude_frozen_parameters behave as deepspeed/runtime/engine.py's load_checkpoint/_load_checkpoint and
save_checkpoint. The yardstick for "the optimizer stays fresh" is a second engine built from the loaded
weights: its first step must give the same parameters bit for bit."""

import warnings

import pytest
import torch

import dsrt
import dsrt as deepspeed
from dsrt.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

from conftest import HalfSafeLinear, needs_cpu_half_matmul

WARMUP = {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 0.01, "warmup_num_steps": 10,
                                         "warmup_type": "linear"}}


def tiny_model(seed=0, extra=False):
    torch.manual_seed(seed)
    layers = [torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)]
    if extra:
        layers.append(torch.nn.Linear(4, 4))
    return torch.nn.Sequential(*layers)


def config(**overrides):
    cfg = {"train_batch_size": 4, "optimizer": {"type": "Adam", "params": {"lr": 0.01}}}
    cfg.update(overrides)
    return cfg


def train_steps(engine, steps, seed=1):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps * engine.gradient_accumulation_steps()):
        x = torch.randn(engine.train_micro_batch_size_per_gpu(), 8, generator=gen).to(engine.module[0].weight.dtype)
        loss = engine(x).float().pow(2).mean()
        engine.backward(loss)
        engine.step()


def weights(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def assert_same(got, want):
    assert got.keys() == want.keys()
    for n in want:
        assert torch.equal(got[n], want[n]), f"parameter {n} differs"


def saved_run(tmp_path, cfg, steps=3, client_state=None, seed=6):
    """Trains a model `steps` steps, saves it to tmp_path; returns its weights right after the save."""
    model = tiny_model(seed)
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    train_steps(engine, steps)
    engine.save_checkpoint(tmp_path, client_state=client_state or {"epoch": 5})
    return weights(model)


def engine_from_weights(w, cfg, seed=7):
    """A fresh engine (fresh Adam, step 0) on a model that holds `w` before initialize."""
    model = tiny_model(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(w[n].float())
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    return engine, model


@pytest.mark.parametrize("cfg", [
    config(scheduler=WARMUP),
    config(scheduler=WARMUP, zero_optimization={"stage": 2}, bf16={"enabled": True}),
    config(scheduler=WARMUP, zero_optimization={"stage": 3}),
    config(scheduler=WARMUP, zero_optimization={"stage": 2, "offload_optimizer": {"device": "cpu"}}),
], ids=["stage0-fp32", "stage2-bf16", "stage3-fp32", "stage2-offload"])
def test_load_module_only_loads_the_weights_and_keeps_a_fresh_engine(tmp_path, cfg):
    saved = saved_run(tmp_path, cfg)
    model = tiny_model(7)
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    lr0 = engine.get_lr()
    path, client = engine.load_checkpoint(tmp_path, load_module_only=True)
    assert path.endswith("global_step3")
    if cfg.get("zero_optimization", {}).get("stage") != 3:
        assert_same(weights(model), saved)
    assert engine.global_steps == 0 and engine.global_samples == 0 and engine.skipped_steps == 0
    assert engine.get_lr() == lr0  # the scheduler is at its start
    # DeepSpeed hands back the counters it did not restore, next to the script's own keys.
    assert client == {"epoch": 5, "global_steps": 3, "global_samples": 12, "skipped_steps": 0,
                      "dp_world_size": 1, "mp_world_size": 1}
    # The next step is a fresh Adam's first step from the loaded (and, for bf16, rounded) weights.
    twin, twin_model = engine_from_weights(saved, cfg)
    train_steps(engine, 1, seed=3)
    train_steps(twin, 1, seed=3)
    if cfg.get("zero_optimization", {}).get("stage") != 3:
        assert_same(weights(model), weights(twin_model))
    assert engine.global_steps == 1
    b = engine._engine.full_params()
    t = twin._engine.full_params()
    assert all(torch.equal(x, y) for x, y in zip(b, t)), "fp32 masters differ from a fresh engine's"


@pytest.mark.parametrize("stage", [0, 2])
def test_load_optimizer_states_false_restores_counters_but_not_the_optimizer(tmp_path, stage):
    cfg = config(zero_optimization={"stage": stage})
    saved = saved_run(tmp_path, cfg)
    model = tiny_model(7)
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    _, client = engine.load_checkpoint(tmp_path, load_optimizer_states=False)
    assert_same(weights(model), saved)
    assert engine.global_steps == 3 and engine.global_samples == 12
    assert client == {"epoch": 5, "optimizer": None}
    twin, twin_model = engine_from_weights(saved, cfg)
    train_steps(engine, 1, seed=3)
    train_steps(twin, 1, seed=3)
    assert_same(weights(model), weights(twin_model))


def test_load_optimizer_states_true_still_continues_the_saved_optimizer(tmp_path):
    """The control for the test above: with the optimizer state the next step differs from a fresh Adam's."""
    cfg = config(zero_optimization={"stage": 2})
    saved = saved_run(tmp_path, cfg)
    model = tiny_model(7)
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    engine.load_checkpoint(tmp_path)
    twin, twin_model = engine_from_weights(saved, cfg)
    train_steps(engine, 1, seed=3)
    train_steps(twin, 1, seed=3)
    assert not torch.equal(model[0].weight, twin_model[0].weight)


def test_load_lr_scheduler_states_false_keeps_the_schedule_at_its_start_but_restores_the_counters(tmp_path):
    cfg = config(scheduler=WARMUP)
    saved_run(tmp_path, cfg)
    engine, _, _, _ = deepspeed.initialize(model=tiny_model(7), config=cfg)
    lr0 = engine.get_lr()
    _, client = engine.load_checkpoint(tmp_path, load_lr_scheduler_states=False)
    assert engine.global_steps == 3
    assert engine.get_lr() == lr0
    assert client == {"epoch": 5, "lr_scheduler": {"last_batch_iteration": 2}}
    resumed, _, _, _ = deepspeed.initialize(model=tiny_model(7), config=cfg)
    resumed.load_checkpoint(tmp_path)
    assert resumed.get_lr() != lr0


def test_load_module_strict_false_tolerates_missing_and_unexpected_parameters(tmp_path):
    cfg = config()
    saved = saved_run(tmp_path, cfg)
    bigger = tiny_model(7, extra=True)
    engine, _, _, _ = deepspeed.initialize(model=bigger, config=cfg)
    before = weights(bigger)
    with pytest.raises(dsrt.DsrtError, match="the model has 6 parameters, got '4'"):
        engine.load_checkpoint(tmp_path)
    with pytest.raises(dsrt.DsrtError, match="(?s)missing: 3.weight, 3.bias; unexpected: none.*hint: .*load_optimizer_states=False"):
        engine.load_checkpoint(tmp_path, load_module_strict=False)
    engine.load_checkpoint(tmp_path, load_module_strict=False, load_module_only=True)
    got = weights(bigger)
    assert_same({n: got[n] for n in saved}, saved)
    assert_same({n: got[n] for n in ("3.weight", "3.bias")}, {n: before[n] for n in ("3.weight", "3.bias")})
    train_steps(engine, 1)  # the engine trains on from there

    # The other way: the checkpoint has a parameter the model lacks.
    big_dir = tmp_path / "big"
    big = tiny_model(8, extra=True)
    big_engine, _, _, _ = deepspeed.initialize(model=big, config=cfg)
    train_steps(big_engine, 1)
    big_engine.save_checkpoint(big_dir)
    small = tiny_model(9)
    small_engine, _, _, _ = deepspeed.initialize(model=small, config=cfg)
    small_engine.load_checkpoint(big_dir, load_module_strict=False, load_optimizer_states=False)
    assert torch.equal(small[0].weight, big[0].weight) and small_engine.global_steps == 1


def test_a_shape_mismatch_fails_even_when_not_strict(tmp_path):
    saved_run(tmp_path, config())
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5))
    engine, _, _, _ = deepspeed.initialize(model=model, config=config())
    with pytest.raises(dsrt.DsrtError, match=r"parameter '2.weight' has shape \[5, 16\] in the model, got '\[4, 16\]'"):
        engine.load_checkpoint(tmp_path, load_module_strict=False, load_module_only=True)


def test_a_stage0_checkpoint_loads_into_zero_with_module_only(tmp_path):
    saved = saved_run(tmp_path, config())
    model = tiny_model(7)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config(zero_optimization={"stage": 2}))
    with pytest.raises(dsrt.DsrtError, match="saved at ZeRO stage 0, cannot load into stage 2"):
        engine.load_checkpoint(tmp_path)
    engine.load_checkpoint(tmp_path, load_module_only=True)
    assert_same(weights(model), saved)


def test_a_zero_checkpoint_into_a_stage0_engine_points_to_load_module_only(tmp_path):
    saved = saved_run(tmp_path, config(zero_optimization={"stage": 2}))
    model = tiny_model(7)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config())
    with pytest.raises(dsrt.DsrtError, match=r"saved at ZeRO stage 2, cannot load into stage 0, got 'stage 2'\n"
                                             r"  hint: .*load_module_only=True loads the weights alone"):
        engine.load_checkpoint(tmp_path)
    engine.load_checkpoint(tmp_path, load_module_only=True)
    assert_same(weights(model), saved)


def test_save_latest_false_writes_the_tag_but_leaves_latest(tmp_path):
    model = tiny_model(6)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config())
    train_steps(engine, 1)
    engine.save_checkpoint(tmp_path / "only", tag="a", save_latest=False)
    assert (tmp_path / "only" / "a").is_dir() and not (tmp_path / "only" / "latest").exists()
    engine.save_checkpoint(tmp_path, tag="a")
    train_steps(engine, 1)
    engine.save_checkpoint(tmp_path, tag="b", save_latest=False)
    assert (tmp_path / "latest").read_text().strip() == "a" and (tmp_path / "b").is_dir()
    fresh, _, _, _ = deepspeed.initialize(model=tiny_model(7), config=config())
    assert fresh.load_checkpoint(tmp_path / "only") == (None, None)
    fresh.load_checkpoint(tmp_path / "only", tag="a")
    assert fresh.global_steps == 1
    fresh.load_checkpoint(tmp_path, tag="b")
    assert fresh.global_steps == 2


def test_custom_load_fn_is_refused_with_a_hint(tmp_path):
    saved_run(tmp_path, config())
    engine, _, _, _ = deepspeed.initialize(model=tiny_model(7), config=config())
    with pytest.raises(dsrt.DsrtError, match="custom_load_fn.*not supported by dsrt\n  hint: .*load_module_strict"):
        engine.load_checkpoint(tmp_path, custom_load_fn=lambda src, dst: None)


def test_frozen_parameters_are_never_saved_and_the_default_says_so(tmp_path):
    model = tiny_model(6)
    model[0].weight.requires_grad_(False)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config())
    train_steps(engine, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine.save_checkpoint(tmp_path, tag="excluded", exclude_frozen_parameters=True)
    assert not caught
    with pytest.warns(UserWarning, match="1 frozen parameter.*'0.weight' first.*exclude_frozen_parameters=True"):
        engine.save_checkpoint(tmp_path, tag="default")
    names = set(get_fp32_state_dict_from_zero_checkpoint(tmp_path, "default"))
    assert names == {"0.bias", "2.weight", "2.bias"}


@needs_cpu_half_matmul
@pytest.mark.parametrize("stage", [0, 2])
def test_fp16_loss_scale_follows_the_optimizer_state(tmp_path, stage):
    """DeepSpeed keeps the loss scaler in the optimizer's state dict: it comes back with the optimizer
    state only; skipped_steps is a counter and comes back unless load_module_only."""
    cfg = config(fp16={"enabled": True, "initial_scale_power": 8}, zero_optimization={"stage": stage})
    torch.manual_seed(0)
    engine, _, _, _ = deepspeed.initialize(model=HalfSafeLinear(), config=cfg)
    for _ in range(2):  # inf gradients: skipped steps, and the scale drops (after the hysteresis at ZeRO)
        loss = engine(torch.full((4, 8), 1e4)).pow(2).mean() * 1e30
        engine.backward(loss)
        engine.step()
    loss = engine(torch.randn(4, 8)).pow(2).mean()
    engine.backward(loss)
    engine.step()
    saved_scale = engine.cur_scale
    assert saved_scale < 256 and engine.skipped_steps == 2
    engine.save_checkpoint(tmp_path)

    def loaded(**options):
        torch.manual_seed(1)
        model = HalfSafeLinear()
        fresh, _, _, _ = deepspeed.initialize(model=model, config=cfg)
        fresh.load_checkpoint(tmp_path, **options)
        return fresh, model

    full, _ = loaded()
    assert (full.cur_scale, full.skipped_steps, full.global_steps) == (saved_scale, 2, 3)
    no_optim, _ = loaded(load_optimizer_states=False)
    assert (no_optim.cur_scale, no_optim.skipped_steps, no_optim.global_steps) == (256, 2, 3)
    module_only, model = loaded(load_module_only=True)
    assert (module_only.cur_scale, module_only.skipped_steps, module_only.global_steps) == (256, 0, 0)
    # The fp32 masters were refreshed from the fp16 weights (DeepSpeed's refresh_fp32_params).
    masters = module_only._engine.full_params()
    assert torch.equal(masters[0], model.lin.weight.detach().float())
    assert torch.equal(masters[1], model.lin.bias.detach().float())


def test_load_module_strict_false_at_stage3_keeps_the_missing_parameters_partitioned_values(tmp_path):
    cfg = config(zero_optimization={"stage": 3})
    engine, _, _, _ = deepspeed.initialize(model=tiny_model(6), config=cfg)
    train_steps(engine, 2)
    engine.save_checkpoint(tmp_path)
    saved = engine._engine.full_params()
    bigger, _, _, _ = deepspeed.initialize(model=tiny_model(7, extra=True), config=cfg)
    before = bigger._engine.full_params()
    _, client = bigger.load_checkpoint(tmp_path, load_module_strict=False, load_optimizer_states=False)
    after = bigger._engine.full_params()
    assert all(torch.equal(a, s) for a, s in zip(after[:4], saved))
    assert all(torch.equal(a, b) for a, b in zip(after[4:], before[4:]))
    assert bigger.global_steps == 2 and client == {"optimizer": None}
    train_steps(bigger, 1)


def test_a_client_scheduler_and_the_groups_follow_the_options_as_in_deepspeed(tmp_path):
    """The client scheduler comes back with load_lr_scheduler_states (else its saved state_dict is
    client_state['lr_scheduler']); the groups' hyper-parameters (torch's optimizer param_groups) with the
    optimizer state; neither with load_module_only."""
    def make(seed):
        model = tiny_model(seed)
        groups = [{"params": [model[0].weight, model[2].weight]},
                  {"params": [model[0].bias, model[2].bias], "weight_decay": 0.0, "lr": 0.004}]
        client = torch.optim.AdamW(groups, lr=0.02, weight_decay=0.1)
        sched = torch.optim.lr_scheduler.LambdaLR(client, lambda step: 0.9 ** step)
        engine, _, _, _ = deepspeed.initialize(model=model, optimizer=client, lr_scheduler=sched,
                                               config={"train_batch_size": 4})
        return engine, sched

    engine, sched = make(4)
    train_steps(engine, 3)
    engine.save_checkpoint(tmp_path, client_state={"epoch": 1})
    saved_groups_lr = engine.get_lr()
    fresh_lr = make(9)[0].get_lr()
    assert saved_groups_lr != fresh_lr

    full, full_sched = make(9)
    assert full.load_checkpoint(tmp_path)[1] == {"epoch": 1}
    assert full_sched.last_epoch == 3 and full.get_lr() == saved_groups_lr

    no_sched, no_sched_sched = make(9)
    _, client = no_sched.load_checkpoint(tmp_path, load_lr_scheduler_states=False)
    assert no_sched_sched.last_epoch == 0 and no_sched.global_steps == 3
    assert client["epoch"] == 1 and client["lr_scheduler"]["last_epoch"] == 3
    assert set(client) == {"epoch", "lr_scheduler"}

    no_optim, no_optim_sched = make(9)
    _, client = no_optim.load_checkpoint(tmp_path, load_optimizer_states=False)
    assert no_optim_sched.last_epoch == 3 and no_optim.get_lr() == fresh_lr
    assert client == {"epoch": 1, "optimizer": None}

    module_only, module_only_sched = make(9)
    _, client = module_only.load_checkpoint(tmp_path, load_module_only=True)
    assert module_only_sched.last_epoch == 0 and module_only.get_lr() == fresh_lr
    assert client == {"epoch": 1, "global_steps": 3, "global_samples": 12, "skipped_steps": 0,
                      "dp_world_size": 1, "mp_world_size": 1}
