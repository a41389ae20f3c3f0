"""DeepSpeed's engine API besides the training loop, in one process (a world of one): no_sync(), the batch-size
setters, deepspeed.utils' safe_get/safe_set accessors at every ZeRO stage (offload, bf16) and
zero.unregister_external_parameter. Values are checked against plain torch autograd, the engine's own
consolidated weights or another engine, never against constants. The ranks' side (no_sync skipping the
reduction, gathers of partitioned fragments) runs in test_zero_to_fp32.py's 2-rank run."""

import pytest
import torch
import torch.nn.functional as F

import dsrt as deepspeed
from dsrt.utils import (safe_get_full_fp32_param, safe_get_full_grad, safe_get_full_optimizer_state,
                        safe_get_local_fp32_param, safe_get_local_grad, safe_get_local_optimizer_state,
                        safe_set_full_fp32_param, safe_set_full_optimizer_state, safe_set_local_fp32_param,
                        safe_set_local_optimizer_state)


def tiny_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def engine_for(stage, bf16=False, offload=False, gas=1, **zero):
    zero = {"stage": stage, **zero}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu"}
    cfg = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": gas,
           "optimizer": {"type": "AdamW", "params": {"lr": 0.01}}, "zero_optimization": zero}
    if bf16:
        cfg["bf16"] = {"enabled": True}
    model = tiny_model()
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    return engine


def batches(n, dtype=torch.float32):
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(2, 8, generator=gen).to(dtype) for _ in range(n)]


def loss_of(module, x):
    return module(x).float().pow(2).mean()


def clone(t):
    return None if t is None else t.detach().clone()


# (stage, bf16, offload, extra zero_optimization keys)
CASES = [(0, False, False, {}), (0, True, False, {}), (1, False, False, {}), (1, True, True, {}),
         (2, False, False, {}), (2, True, True, {}), (3, False, False, {}),
         (3, True, True, {"stage3_param_persistence_threshold": 0})]


@pytest.mark.parametrize("stage,bf16,offload,zero", CASES)
def test_full_getters_return_the_masters_gradients_and_adam_state_the_step_used(stage, bf16, offload, zero):
    engine = engine_for(stage, bf16, offload, **zero)
    x = batches(1, torch.bfloat16 if bf16 else torch.float32)[0]
    engine.backward(loss_of(engine, x))
    grads = [clone(safe_get_full_grad(p)) for p in engine._params]
    if not bf16:  # the gradient is plain autograd's on the same weights and batch
        reference = tiny_model()
        loss_of(reference, x).backward()
        for got, p in zip(grads, reference.parameters()):
            torch.testing.assert_close(got, p.grad, rtol=1e-5, atol=1e-7)
    engine.step()
    masters = engine._engine.full_params()
    for p, g, master in zip(engine._params, grads, masters):
        fp32 = safe_get_full_fp32_param(p)
        if stage == 0:  # DeepSpeed 0.19 keeps no fp32 mapping there either (FP16_Optimizer for bf16 too)
            assert fp32 is None and safe_get_full_optimizer_state(p, "exp_avg") is None
            continue
        assert fp32.dtype == torch.float32 and torch.equal(fp32, master)
        # One AdamW step from zero state: exp_avg = (1 - beta1) g, exp_avg_sq = (1 - beta2) g^2.
        torch.testing.assert_close(safe_get_full_optimizer_state(p, "exp_avg"), 0.1 * g.float(), rtol=1e-5, atol=1e-9)
        torch.testing.assert_close(safe_get_full_optimizer_state(p, "exp_avg_sq"), 0.001 * g.float() ** 2,
                                   rtol=1e-4, atol=1e-12)


@pytest.mark.parametrize("stage,bf16,offload,zero", [c for c in CASES if c[0] > 0])
def test_full_setters_write_the_master_the_model_copy_and_the_optimizer_state(stage, bf16, offload, zero):
    engine = engine_for(stage, bf16, offload, **zero)
    engine.backward(loss_of(engine, batches(1, torch.bfloat16 if bf16 else torch.float32)[0]))
    engine.step()
    p = engine._params[0]
    value = torch.randn(16, 8)
    safe_set_full_fp32_param(p, value)
    safe_set_full_optimizer_state(p, value.abs(), "exp_avg_sq")
    assert torch.equal(safe_get_full_fp32_param(p), value)
    assert torch.equal(safe_get_full_optimizer_state(p, "exp_avg_sq"), value.abs())
    with deepspeed.zero.GatheredParameters([p]):  # what the next forward computes with
        assert torch.equal(p.detach(), value.to(p.dtype))
    assert torch.equal(engine._engine.full_params()[0], value)  # and what a checkpoint saves


@pytest.mark.parametrize("bf16", [False, True])
def test_stage_0_has_no_fp32_mapping_so_the_setters_do_nothing_as_deepspeeds(bf16):
    engine = engine_for(0, bf16)
    p = engine._params[0]
    before = p.detach().clone()
    safe_set_full_fp32_param(p, torch.zeros(16, 8))
    assert torch.equal(p.detach(), before)


def test_an_unknown_state_name_says_which_the_optimizer_keeps():
    p = engine_for(1)._params[0]
    with pytest.raises(ValueError, match="exp_avg_sqq not found in optimizer state fragment.*exp_avg, exp_avg_sq"):
        safe_get_full_optimizer_state(p, "exp_avg_sqq")


@pytest.mark.parametrize("stage", [1, 2])
def test_gradients_of_zero_1_and_2_are_gone_after_step_as_deepspeed_says(stage):
    engine = engine_for(stage)
    engine.backward(loss_of(engine, batches(1)[0]))
    engine.step()
    with pytest.raises(ValueError, match="only available immediately after backward and before engine step"):
        safe_get_full_grad(engine._params[0])


def test_stage_0_gradients_are_none_after_step_and_p_grad_inside_a_window():
    engine = engine_for(0, gas=2)
    engine.backward(loss_of(engine, batches(1)[0]))
    p = engine._params[0]
    assert safe_get_full_grad(p) is p.grad
    engine.step()
    engine.backward(loss_of(engine, batches(1)[0]))
    engine.step()
    assert safe_get_full_grad(p) is None


def test_local_accessors_are_zero_3_only_and_read_and_write_this_ranks_run():
    with pytest.raises(AssertionError, match="only defined for ZeRO-3 partitioned parameters"):
        safe_get_local_fp32_param(engine_for(2)._params[0])
    engine = engine_for(3, stage3_param_persistence_threshold=0)
    engine.backward(loss_of(engine, batches(1)[0]))
    p = engine._params[0]
    full = safe_get_full_grad(p)
    torch.testing.assert_close(safe_get_local_grad(p), full.reshape(-1))  # one rank holds all of it
    engine.step()
    assert torch.equal(safe_get_local_fp32_param(p), safe_get_full_fp32_param(p).reshape(-1))
    value = torch.randn(128)
    safe_set_local_fp32_param(p, value)
    safe_set_local_optimizer_state(p, value.abs(), "exp_avg_sq")
    assert torch.equal(safe_get_local_optimizer_state(p, "exp_avg_sq"), value.abs())
    with deepspeed.zero.GatheredParameters([p]):
        assert torch.equal(p.detach().reshape(-1), value)
    with pytest.raises(AssertionError, match="Number of elements do not match: 3 != 128"):
        safe_set_local_fp32_param(p, torch.zeros(3))


def test_frozen_parameters_and_plain_tensors_have_no_fragment():
    engine = engine_for(1)
    assert safe_get_full_fp32_param(torch.nn.Parameter(torch.zeros(2))) is None
    assert safe_get_full_grad(torch.zeros(2)) is None
    assert engine is not None


# ---- no_sync ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", [2, 3])
def test_no_sync_is_refused_where_gradients_are_partitioned(stage):
    engine = engine_for(stage)
    with pytest.raises(AssertionError, match=f"incompatible with gradient partitioning logic of ZeRO stage {stage}"):
        with engine.no_sync():
            pass


def test_no_sync_refuses_reentry_and_step_inside_as_deepspeed():
    engine = engine_for(1)
    with engine.no_sync():
        with pytest.raises(AssertionError, match="reentry is unsupported"):
            with engine.no_sync():
                pass
        engine.backward(loss_of(engine, batches(1)[0]))
        with pytest.raises(AssertionError, match="illegal to call Engine.step"):
            engine.step()
    assert not engine._engine.no_sync


@pytest.mark.parametrize("stage,bf16", [(0, False), (0, True), (1, False), (1, True)])
def test_backwards_inside_no_sync_accumulate_into_the_next_reducing_backward(stage, bf16):
    dtype = torch.bfloat16 if bf16 else torch.float32
    x1, x2, x3 = batches(3, dtype)
    synced = engine_for(stage, bf16)
    with synced.no_sync():
        synced.backward(loss_of(synced, x1))
        synced.backward(loss_of(synced, x2))
    synced.backward(loss_of(synced, x3))
    synced.step()
    assert synced.global_steps == 1 and synced.micro_steps == 1  # no_sync's backwards are not micro-steps
    # The same gradient in one backward of the summed losses.
    summed = engine_for(stage, bf16)
    summed.backward(loss_of(summed, x1) + loss_of(summed, x2) + loss_of(summed, x3))
    summed.step()
    for a, b in zip(synced._engine.full_params(), summed._engine.full_params()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("stage", [0, 1])
def test_accelerates_accumulate_loop_with_no_sync_trains_as_deepspeeds_own_loop(stage):
    # Accelerate at ZeRO 0/1: the micro-steps that do not sync run inside engine.no_sync(), each with
    # set_gradient_accumulation_boundary before its backward; step() only at the boundary.
    import contextlib
    plain, accel = engine_for(stage, gas=2), engine_for(stage, gas=2)
    for i, x in enumerate(batches(6)):
        plain.backward(loss_of(plain, x))
        plain.step()
        sync = i % 2 == 1
        with contextlib.nullcontext() if sync else accel.no_sync():
            accel.set_gradient_accumulation_boundary(sync)
            accel.backward(loss_of(accel, x) / 2, scale_wrt_gas=False)
            if sync:
                accel.step()
    assert accel.global_steps == plain.global_steps == 3
    for a, b in zip(accel._engine.full_params(), plain._engine.full_params()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_a_step_right_after_no_sync_is_refused_because_nothing_was_reduced():
    engine = engine_for(0)
    with engine.no_sync():
        engine.backward(loss_of(engine, batches(1)[0]))
    with pytest.raises(RuntimeError, match="never reduced"):
        engine.step()


def test_deepspeeds_zero_grad_between_no_sync_blocks_starts_the_accumulation_again():
    # DeepSpeed's test_multiple_ctxts: the same batches in two no_sync blocks, zero_grad between, give the
    # same gradients.
    engine = engine_for(1)
    norms = []
    for _ in range(2):
        with engine.no_sync():
            for x in batches(2):
                engine.backward(loss_of(engine, x))
                norms.append(sum(safe_get_full_grad(p).norm() for p in engine._params).item())
        engine.zero_grad()
    assert norms[:2] == norms[2:]


# ---- batch size setters -----------------------------------------------------------------------------------

def test_set_train_batch_size_changes_accumulation_and_trains_as_an_engine_configured_so():
    engine = engine_for(0, gas=2)
    engine.set_train_batch_size(8)  # micro 2 x 1 rank: gas 4
    assert (engine.train_batch_size(), engine.gradient_accumulation_steps(),
            engine.train_micro_batch_size_per_gpu()) == (8, 4, 2)
    with pytest.raises(ValueError, match="divisible by micro-batch data parallelism"):
        engine.set_train_batch_size(7)
    configured = engine_for(0, gas=4)
    boundaries = []
    for x in batches(4):
        for e in (engine, configured):
            e.backward(loss_of(e, x))
        boundaries.append(engine.is_gradient_accumulation_boundary())
        for e in (engine, configured):
            e.step()
    assert boundaries == [False, False, False, True]
    assert engine.global_steps == 1 and engine.global_samples == 8
    for a, b in zip(engine._engine.full_params(), configured._engine.full_params()):
        assert torch.equal(a, b)


def test_set_train_micro_batch_size_keeps_accumulation():
    engine = engine_for(1, gas=2)
    engine.set_train_micro_batch_size(4)
    assert (engine.train_batch_size(), engine.gradient_accumulation_steps(),
            engine.train_micro_batch_size_per_gpu()) == (8, 2, 4)


# ---- zero.unregister_external_parameter -------------------------------------------------------------------

def test_unregister_external_parameter_undoes_register_and_refuses_others():
    engine = engine_for(3)
    model = engine.module
    borrowed = model[0].weight
    deepspeed.zero.register_external_parameter(model[2], borrowed)
    assert any(p is borrowed for p in model[2]._dsrt_params)
    deepspeed.zero.unregister_external_parameter(model[2], borrowed)
    assert all(p is not borrowed for p in model[2]._dsrt_params)
    with pytest.raises(RuntimeError, match="not a registered external parameter"):
        deepspeed.zero.unregister_external_parameter(model[2], borrowed)
    with pytest.raises(RuntimeError, match="not a registered external parameter"):
        deepspeed.zero.unregister_external_parameter(model[2], model[2].weight)  # its own
    with pytest.raises(RuntimeError, match="not a torch.nn.Parameter"):
        deepspeed.zero.unregister_external_parameter(model[2], torch.zeros(2))
    engine.backward(loss_of(engine, batches(1)[0]))  # still trains
    engine.step()


class Borrower(torch.nn.Module):
    """Uses its child's weight in its own forward and says so in __init__, as Hugging Face's wav2vec2 does."""

    def __init__(self, register=True):
        super().__init__()
        torch.manual_seed(0)
        self.inner = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 4)
        if register:
            deepspeed.zero.register_external_parameter(self, self.inner.weight)

    def forward(self, x):
        return self.head(F.linear(x, self.inner.weight) + self.inner(x))


def test_external_parameters_registered_in_init_before_initialize_are_gathered_at_zero_3():
    model = Borrower()
    cfg = {"train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
           "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    x = batches(1)[0]
    loss = loss_of(engine, x)
    assert torch.equal(loss, loss_of(Borrower(register=False), x))
    engine.backward(loss)
    engine.step()
    with pytest.raises(RuntimeError, match="(?s)owns no trainable parameters.*before dsrt.initialize"):
        deepspeed.zero.register_external_parameter(torch.nn.ReLU(), model.head.weight)


class Experts(torch.nn.Module):
    """An MoE layer's shape: the experts' weights are read directly, a different one per input."""

    def __init__(self):
        super().__init__()
        self.experts = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        chosen = int(x.detach().abs().sum()) % 3
        return F.linear(x, self.experts[chosen].weight, self.experts[chosen].bias)


class MoeModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.moe = Experts()
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.moe(x))


def test_z3_leaf_modules_gather_their_whole_subtree_around_their_forward():
    from dsrt.utils import get_z3_leaf_modules, set_z3_leaf_modules
    model = MoeModel()
    assert set_z3_leaf_modules(model, [Experts]) == [model.moe] == get_z3_leaf_modules(model)
    with pytest.raises(ValueError, match="No modules of type"):
        set_z3_leaf_modules(model, ["NoSuchLayer"])
    cfg = {"train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
           "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    x = batches(1)[0]
    assert torch.equal(loss_of(engine, x), loss_of(MoeModel(), x))
    for x in batches(3):  # different experts each step, gathered for backward too
        engine.backward(loss_of(engine, x))
        engine.step()
    assert engine.global_steps == 3
