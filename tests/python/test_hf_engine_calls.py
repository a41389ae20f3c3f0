"""The engine calls Hugging Face's Trainer and Accelerate make, with DeepSpeed's semantics, in one process (a
world of one; the 2-rank runs against real DeepSpeed are tests/hf). Each case is checked against the plain
DeepSpeed-style loop or against the module's own tensors, never against a constant."""

import logging
import pytest
import torch

import dsrt as deepspeed

from conftest import HalfSafeLinear, needs_cpu_half_matmul


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def config(**overrides):
    cfg = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
           "optimizer": {"type": "AdamW", "params": {"lr": 0.01}}}
    cfg.update(overrides)
    return cfg


def batches(n, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 8, generator=gen) for _ in range(n)]


def engine_for(stage=0, **overrides):
    model = tiny_model()
    cfg = config(**{"zero_optimization": {"stage": stage}, **overrides})
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    return engine


def weights(engine):
    return [p.detach().clone() for p in engine._engine.full_params()]


@pytest.mark.parametrize("stage", [0, 2, 3])
def test_accelerate_loop_with_the_boundary_set_by_the_caller_equals_deepspeeds_own_loop(stage):
    # DeepSpeed's loop: backward and step every micro-batch. Accelerate's: set_gradient_accumulation_boundary
    # before each backward, step() only at the boundary, the Trainer's loss already divided by gas.
    plain, accel = engine_for(stage), engine_for(stage)
    data = batches(8)
    for x in data:
        loss = plain(x).pow(2).mean()
        plain.backward(loss)
        plain.step()
    for i, x in enumerate(data):
        boundary = i % 2 == 1
        accel.set_gradient_accumulation_boundary(boundary)
        loss = accel(x).pow(2).mean() / 2
        accel.backward(loss, scale_wrt_gas=False)
        if boundary:
            accel.step()
    assert accel.global_steps == plain.global_steps == 4
    for a, b in zip(weights(accel), weights(plain)):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert accel.is_gradient_accumulation_boundary()  # the caller's last setting stands, as in DeepSpeed


def test_a_second_backward_without_the_boundary_set_is_still_refused():
    engine = engine_for()
    x = batches(1)[0]
    engine.backward(engine(x).sum())
    with pytest.raises(RuntimeError, match="called twice in one micro-step"):
        engine.backward(engine(x).sum())


def test_saving_after_an_accelerate_window_works_though_step_ran_once_per_window(tmp_path):
    engine = engine_for()
    for i, x in enumerate(batches(2)):
        engine.set_gradient_accumulation_boundary(i == 1)
        engine.backward(engine(x).sum())
    engine.step()
    assert engine.global_steps == 1 and engine.micro_steps == 1  # DeepSpeed counts step() calls
    engine.save_checkpoint(tmp_path)
    assert (tmp_path / "latest").read_text().strip() == "global_step1"


def test_saving_inside_an_accelerate_window_is_refused(tmp_path):
    engine = engine_for()
    engine.set_gradient_accumulation_boundary(False)
    engine.backward(engine(batches(1)[0]).sum())
    with pytest.raises(RuntimeError, match="between backward\\(\\) and step\\(\\)|inside a gradient accumulation"):
        engine.save_checkpoint(tmp_path)


def test_infinite_steps_per_print_means_never_and_other_non_finite_values_are_refused_by_key():
    engine = engine_for(steps_per_print=float("inf"))
    assert engine.steps_per_print() is None
    with pytest.raises(RuntimeError, match="gradient_clipping: expected a finite number, got 'nan'"):
        engine_for(gradient_clipping=float("nan"))


@pytest.mark.parametrize("key,block", [("gradient_clipping", None), ("lr", "optimizer")])
def test_a_leftover_auto_outside_deepspeeds_config_models_is_refused_naming_the_key(key, block):
    if block is None:
        overrides = {key: "auto"}
        where = key
    else:
        overrides = {"optimizer": {"type": "AdamW", "params": {key: "auto"}}}
        where = f"optimizer.params.{key}"
    with pytest.raises(RuntimeError, match=f"{where}: \"auto\" is a placeholder"):
        engine_for(**overrides)
    engine_for(zero_optimization={"stage": 2, "reduce_bucket_size": "auto"})  # DeepSpeed's default there


def test_an_engine_without_an_optimizer_runs_forward_and_refuses_training():
    model = tiny_model()
    engine, optimizer, _, _ = deepspeed.initialize(model=model, config={"train_micro_batch_size_per_gpu": 2,
                                                                        "zero_optimization": {"stage": 3}})
    x = batches(1)[0]
    with torch.no_grad():
        want = tiny_model()(x)
        torch.testing.assert_close(engine(x), want)
    with pytest.raises(RuntimeError, match="no optimizer"):
        engine.backward(engine(x).sum())


def test_zero3_consolidated_16bit_state_dict_and_save_16bit_model_equal_the_live_weights(tmp_path):
    engine = engine_for(3, bf16={"enabled": True},
                        zero_optimization={"stage": 3, "stage3_gather_16bit_weights_on_model_save": True})
    for x in batches(4):
        engine.backward(engine(x.bfloat16()).float().pow(2).mean())
        engine.step()
    assert engine.zero_gather_16bit_weights_on_model_save()
    state = engine._zero3_consolidated_16bit_state_dict()
    with deepspeed.zero.GatheredParameters(list(engine.module.parameters())):
        live = {k: v.detach().clone() for k, v in engine.module.state_dict().items()}
    assert state.keys() == live.keys()
    for k in live:
        assert state[k].dtype == torch.bfloat16 and state[k].device.type == "cpu"
        assert torch.equal(state[k], live[k]), k
    assert engine.save_16bit_model(tmp_path, "model.bin")
    saved = torch.load(tmp_path / "model.bin", map_location="cpu")
    for k in live:
        assert torch.equal(saved[k], live[k]), k


def test_clone_tensors_for_torch_save_copies_views_into_their_own_storage():
    from dsrt.checkpoint.utils import clone_tensors_for_torch_save as clone
    flat = torch.arange(10.0)
    out = clone({"a": flat[:3], "b": [flat[3:5], (flat[5:],)], "n": 1})
    assert out["n"] == 1 and torch.equal(out["a"], flat[:3])
    assert out["a"].data_ptr() != flat.data_ptr() and isinstance(out["b"][1], tuple)


def test_destroy_removes_the_zero3_hooks():
    engine = engine_for(3)
    hooked = sum(len(m._forward_pre_hooks) for m in engine.module.modules())
    engine.destroy()
    assert hooked > 0 and sum(len(m._forward_pre_hooks) for m in engine.module.modules()) == 0


def test_frozen_parameters_take_the_16bit_dtype_like_deepspeeds_module_half():
    model = tiny_model()
    model[0].weight.requires_grad_(False)
    engine, *_ = deepspeed.initialize(model=model, model_parameters=[p for p in model.parameters() if p.requires_grad],
                                      config=config(bf16={"enabled": True}))
    assert model[0].weight.dtype == torch.bfloat16 and model[2].weight.dtype == torch.bfloat16


@needs_cpu_half_matmul
def test_fp16_auto_cast_casts_positional_float_inputs_to_half():
    seen = []

    class Probe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, x, y=None):
            seen.append((x.dtype, None if y is None else y.dtype))
            return torch.nn.functional.linear(x.float(), self.lin.weight.float(), self.lin.bias.float())

    engine, *_ = deepspeed.initialize(model=Probe(), config=config(fp16={"enabled": True, "auto_cast": True}))
    engine(torch.randn(2, 8), y=torch.randn(2))
    assert seen == [(torch.float16, torch.float32)]


@needs_cpu_half_matmul
def test_optimizer_overflow_reports_the_skipped_fp16_step():
    torch.manual_seed(0)
    engine, optimizer, _, _ = deepspeed.initialize(model=HalfSafeLinear(), config={
        "train_batch_size": 4, "optimizer": {"type": "Adam", "params": {"lr": 0.01}},
        "fp16": {"enabled": True, "initial_scale_power": 8}})
    engine.backward(engine(torch.full((4, 8), 1e4)).pow(2).mean() * 1e4)  # overflows once scaled
    engine.step()
    assert optimizer.overflow is True and engine.skipped_steps == 1
    engine.backward(engine(torch.randn(4, 8)).pow(2).mean())
    engine.step()
    assert optimizer.overflow is False and engine.was_step_applied()


def test_the_deepspeed_logger_and_log_dist_are_deepspeeds():
    from dsrt.utils import log_dist, logger
    assert logger.name == "DeepSpeed" and not logger.propagate
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    old = logger.level
    try:
        logger.setLevel(logging.INFO)
        torch.distributed.is_initialized() or engine_for()  # a process group: log_dist filters by rank
        log_dist("on rank 0", ranks=[0])
        log_dist("on rank 1 only", ranks=[1])
    finally:
        logger.setLevel(old)
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == ["[Rank 0] on rank 0"]
