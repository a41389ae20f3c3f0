"""dsrt's DeepSpeed API in one process (a world of one): names, return values, counters and errors."""

import argparse
import warnings

import pytest
import torch

import dsrt
import dsrt as deepspeed

from conftest import HalfSafeLinear, needs_cpu_half_matmul


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def config(**overrides):
    cfg = {"train_batch_size": 4, "optimizer": {"type": "Adam", "params": {"lr": 0.01}}}
    cfg.update(overrides)
    return cfg


def train_steps(engine, steps, seed=1):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps * engine.gradient_accumulation_steps()):
        x = torch.randn(engine.train_micro_batch_size_per_gpu(), 8, generator=gen)
        loss = engine(x).pow(2).mean()
        engine.backward(loss)
        engine.step()
        out.append(loss.item())
    return out


def test_initialize_returns_engine_optimizer_loader_and_scheduler_like_deepspeed():
    model = tiny_model()
    data = torch.utils.data.TensorDataset(torch.randn(10, 8))
    cfg = config(scheduler={"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.01,
                                                           "warmup_num_steps": 10}})
    engine, optimizer, loader, scheduler = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                                training_data=data, config=cfg)
    assert isinstance(engine, dsrt.DeepSpeedEngine)
    assert engine.module is model
    assert engine.train_batch_size() == 4 and engine.train_micro_batch_size_per_gpu() == 4
    assert engine.gradient_accumulation_steps() == 1
    assert engine.zero_optimization_stage() == 0
    assert engine.global_rank == 0 and engine.local_rank == 0 and engine.device == torch.device("cpu")
    assert optimizer.param_groups[0]["lr"] == engine.get_lr()[0]
    assert scheduler.get_last_lr() == engine.get_lr()
    assert [b[0].shape[0] for b in loader] == [4, 4, 2]  # micro-batches of this rank's shard
    assert torch.distributed.is_initialized() and torch.distributed.get_world_size() == 1


def test_training_advances_counters_and_the_scheduled_lr():
    model = tiny_model()
    cfg = config(gradient_accumulation_steps=2, train_micro_batch_size_per_gpu=2,
                 scheduler={"type": "WarmupLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 0.01,
                                                           "warmup_num_steps": 10, "warmup_type": "linear"}})
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    lr0 = engine.get_lr()[0]
    assert not engine.is_gradient_accumulation_boundary()
    losses = train_steps(engine, 3)
    assert engine.global_steps == 3 and engine.global_samples == 12 and engine.micro_steps == 6
    assert engine.was_step_applied()
    assert engine.get_lr()[0] > lr0
    assert losses[-1] < losses[0]


def test_the_same_training_in_dsrt_and_in_plain_torch_gives_the_same_losses():
    """Stage 0, one rank, Adam without weight decay: the engine is torch.optim.Adam plus nothing."""
    model, reference = tiny_model(3), tiny_model(3)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config(
        optimizer={"type": "Adam", "params": {"lr": 0.01, "adam_w_mode": False}}))
    opt = torch.optim.Adam(reference.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(5)
    for _ in range(5):
        x = torch.randn(4, 8, generator=gen)
        loss = engine(x).pow(2).mean()
        engine.backward(loss)
        engine.step()
        ref_loss = reference(x).pow(2).mean()
        opt.zero_grad()
        ref_loss.backward()
        opt.step()
        assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-6)


def test_add_config_arguments_adds_deepspeeds_flags_and_args_deepspeed_config_is_used(write_config):
    parser = deepspeed.add_config_arguments(argparse.ArgumentParser())
    path = write_config(config(train_batch_size=8))
    args = parser.parse_args(["--deepspeed", "--deepspeed_config", str(path)])
    assert args.deepspeed and args.deepspeed_config == str(path)
    engine, _, _, _ = deepspeed.initialize(args=args, model=tiny_model())
    assert engine.train_batch_size() == 8


def test_a_config_given_twice_is_refused(write_config):
    args = argparse.Namespace(deepspeed_config=str(write_config(config())))
    with pytest.raises(dsrt.DsrtError, match="both as config= and as args.deepspeed_config"):
        deepspeed.initialize(args=args, model=tiny_model(), config=config())


def test_an_unknown_config_key_is_named_not_ignored(capfd):
    deepspeed.initialize(model=tiny_model(), config=config(no_such_key_here=1))
    assert "no_such_key_here" in capfd.readouterr().err


def test_a_bad_config_value_is_one_exception_with_the_key_path():
    with pytest.raises(dsrt.DsrtError, match="zero_optimization.stage") as info:
        deepspeed.initialize(model=tiny_model(), config=config(zero_optimization={"stage": 7}))
    assert "frame #" not in str(info.value)  # the C++ message, without LibTorch's backtrace


def test_where_deepspeed_asserts_dsrt_raises_an_error_that_is_both_assertion_and_dsrt_error():
    """DeepSpeed's TestNoModel and TestInitNoOptimizer: no model (also a model passed positionally, which lands in
    args=), and backward/step on an engine built without an optimizer, are its AssertionErrors."""
    assert issubclass(dsrt.DsrtAssertionError, AssertionError) and issubclass(dsrt.DsrtAssertionError, dsrt.DsrtError)
    cfg = config()
    with pytest.raises(AssertionError, match="deepspeed.initialize requires a model"):
        deepspeed.initialize(model=None, config=cfg)
    with pytest.raises(dsrt.DsrtError, match="requires a model .*args= got a Sequential"):
        deepspeed.initialize(tiny_model(), config=cfg)
    del cfg["optimizer"]
    engine = deepspeed.initialize(model=tiny_model(), config=cfg)[0]
    loss = engine(torch.randn(2, 8)).sum()
    with pytest.raises(AssertionError, match="this engine has no optimizer"):
        engine.backward(loss)
    with pytest.raises(AssertionError, match="this engine has no optimizer"):
        engine.step()


def test_a_model_without_trainable_parameters_is_refused():
    model = tiny_model()
    for p in model.parameters():
        p.requires_grad_(False)
    with pytest.raises(dsrt.DsrtError, match="no parameter that requires grad"):
        deepspeed.initialize(model=model, config=config())


def test_a_non_scalar_loss_and_a_loss_without_grad_are_refused():
    engine, _, _, _ = deepspeed.initialize(model=tiny_model(), config=config())
    out = engine(torch.randn(4, 8))
    with pytest.raises(dsrt.DsrtError, match="scalar"):
        engine.backward(out)
    with pytest.raises(dsrt.DsrtError, match="does not require grad"):
        engine.backward(torch.tensor(1.0))  # backward before any forward built a graph
    with pytest.raises(dsrt.DsrtError, match="no engine.backward"):
        engine.step()


def test_a_client_torch_adam_is_translated_into_the_engine_optimizer():
    model, reference = tiny_model(4), tiny_model(4)
    client = torch.optim.Adam(model.parameters(), lr=0.02, betas=(0.8, 0.99), weight_decay=0.1)
    cfg = config()
    del cfg["optimizer"]
    engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=client, config=cfg)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.02)
    assert optimizer.param_groups[0]["betas"] == pytest.approx((0.8, 0.99))
    ref_opt = torch.optim.Adam(reference.parameters(), lr=0.02, betas=(0.8, 0.99), weight_decay=0.1)
    x = torch.randn(4, 8)
    for _ in range(3):
        loss = engine(x).pow(2).mean()
        engine.backward(loss)
        engine.step()
        ref_loss = reference(x).pow(2).mean()
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_a_client_optimizer_dsrt_has_no_builtin_for_needs_zero_allow_untested_optimizer_at_zero():
    model = tiny_model()
    cfg = config(zero_optimization={"stage": 1})
    del cfg["optimizer"]
    with pytest.raises(dsrt.DsrtError, match=r"RMSprop(.|\n)*hint: .*zero_allow_untested_optimizer"):
        deepspeed.initialize(model=model, optimizer=torch.optim.RMSprop(model.parameters()), config=cfg)
    with pytest.raises(dsrt.DsrtError, match="optimizer= and the config has"):
        deepspeed.initialize(model=model, optimizer=torch.optim.Adam(model.parameters()), config=config())


def test_checkpoint_round_trip_keeps_counters_weights_and_any_client_state(tmp_path):
    model = tiny_model(6)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config())
    train_steps(engine, 2)
    state = {"epoch": 3, "note": "x", "tensor": torch.arange(3), "tuple": (1, 2)}
    assert engine.save_checkpoint(tmp_path, client_state=state)
    saved = {n: p.detach().clone() for n, p in model.named_parameters()}
    train_steps(engine, 1)

    fresh = tiny_model(7)
    engine2, _, _, _ = deepspeed.initialize(model=fresh, config=config())
    path, client = engine2.load_checkpoint(tmp_path)
    assert path and "global_step2" in path
    assert client["epoch"] == 3 and client["tuple"] == (1, 2) and torch.equal(client["tensor"], torch.arange(3))
    assert engine2.global_steps == 2
    for n, p in fresh.named_parameters():
        torch.testing.assert_close(p.detach(), saved[n])


def test_load_checkpoint_without_latest_returns_none_and_starts_fresh(tmp_path):
    engine, _, _, _ = deepspeed.initialize(model=tiny_model(), config=config())
    assert engine.load_checkpoint(tmp_path / "empty") == (None, None)
    assert engine.global_steps == 0


def test_bf16_converts_the_model_and_still_learns():
    model = tiny_model()
    engine, _, _, _ = deepspeed.initialize(model=model, config=config(bf16={"enabled": True}))
    assert engine.bfloat16_enabled() and next(model.parameters()).dtype == torch.bfloat16
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 8, generator=gen).bfloat16()
    first = last = None
    for _ in range(20):
        loss = engine(x).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
        first = first if first is not None else loss.item()
        last = loss.item()
    assert last < 0.5 * first


@needs_cpu_half_matmul
def test_fp16_uses_dynamic_loss_scaling_and_skips_an_overflowing_step():
    torch.manual_seed(0)
    model = HalfSafeLinear()
    engine, _, _, _ = deepspeed.initialize(model=model, config=config(
        fp16={"enabled": True, "initial_scale_power": 8}))
    assert engine.fp16_enabled() and model.lin.weight.dtype == torch.float16
    assert engine.cur_scale == 256
    before = model.lin.weight.detach().clone()
    loss = engine(torch.full((4, 8), 1e4)).pow(2).mean() * 1e4  # overflows fp16 gradients once scaled
    engine.backward(loss)
    engine.step()
    assert not engine.was_step_applied() and engine.skipped_steps == 1
    assert torch.equal(model.lin.weight.detach(), before)
    assert engine.cur_scale == 128
    loss = engine(torch.randn(4, 8)).pow(2).mean()
    engine.backward(loss)
    engine.step()
    assert engine.was_step_applied()


def test_gathered_parameters_is_a_no_op_below_stage_3():
    model = tiny_model()
    deepspeed.initialize(model=model, config=config(zero_optimization={"stage": 2}))
    with deepspeed.zero.GatheredParameters(list(model.parameters())):
        assert model[0].weight.shape == (16, 8)


def test_zero_init_exists_and_says_what_it_does():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with deepspeed.zero.Init():
            tiny_model()
    assert any("partitioned by dsrt.initialize" in str(w.message) for w in caught)


def test_zero_to_fp32_and_save_16bit_model_give_the_live_weights(tmp_path):
    from dsrt.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint, load_state_dict_from_zero_checkpoint
    model = tiny_model(8)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config(zero_optimization={"stage": 2}))
    train_steps(engine, 2)
    engine.save_checkpoint(tmp_path / "ckpt")
    state = get_fp32_state_dict_from_zero_checkpoint(tmp_path / "ckpt")
    assert list(state) == [n for n, _ in model.named_parameters()]
    for n, p in model.named_parameters():
        torch.testing.assert_close(state[n], p.detach())
    other = load_state_dict_from_zero_checkpoint(tiny_model(9), tmp_path / "ckpt")
    torch.testing.assert_close(other[0].weight, model[0].weight.detach())
    assert engine.save_16bit_model(tmp_path / "out")
    assert (tmp_path / "out" / "pytorch_model.bin").stat().st_size > 0
