"""The "Lion" and "Adagrad" optimizer blocks (and the client classes that translate to them) train like their
references at every ZeRO stage and under offload_optimizer, in one process.

References: torch.optim.Adagrad (what DeepSpeed builds for "Adagrad" without offload); DeepSpeedCPUAdagrad's
rule (what it builds under offload: deepspeed csrc/adagrad/cpu_adagrad.cpp, the raw gradient over
sqrt(sum) + eps); DeepSpeed's Lion rule (deepspeed csrc/lion/cpu_lion_impl.cpp, Lion_Optimizer::Step_1),
written here in plain torch.
"""

import pytest
import torch

import dsrt as deepspeed
from dsrt.ops.adagrad import DeepSpeedCPUAdagrad
from dsrt.ops.lion import DeepSpeedCPULion, FusedLion

from test_param_groups import assert_same_model, batches, decay_groups, ds_config, model_of, train_engine, train_torch


class ReferenceLion(torch.optim.Optimizer):
    """DeepSpeed's Lion: c = b1*m + (1-b1)*g; p = p*(1 - lr*wd) - copysign(lr, c); m = b2*m + (1-b2)*g."""

    def __init__(self, params, lr, betas=(0.9, 0.999), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            (b1, b2), lr, wd = group["betas"], group["lr"], group["weight_decay"]
            for p in group["params"]:
                m = self.state[p].setdefault("exp_avg", torch.zeros_like(p))
                c = m * b1 + p.grad * (1 - b1)
                if wd > 0:
                    p.mul_(1 - lr * wd)
                p.sub_(torch.copysign(torch.full_like(c, lr), c))
                m.mul_(b2).add_(p.grad * (1 - b2))


class ReferenceCpuAdagrad(torch.optim.Optimizer):
    """DeepSpeedCPUAdagrad: sum += (g + wd*p)^2; p -= lr * g / (sqrt(sum) + eps), g the raw gradient."""

    def __init__(self, params, lr, eps=1e-10, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("sum", torch.zeros_like(p))
                decayed = p.grad + p * group["weight_decay"]
                s.add_(decayed * decayed)
                p.sub_(group["lr"] * p.grad / (s.sqrt() + group["eps"]))


def offload(stage):
    return {"stage": stage, "offload_optimizer": {"device": "cpu"}}


def trained(zero, optimizer=None, params=None, seed=0, client=None):
    model = model_of(seed)
    cfg = {"train_batch_size": 4, "zero_optimization": zero}
    if optimizer is not None:
        cfg["optimizer"] = optimizer
    engine, engine_opt, _, _ = deepspeed.initialize(
        model=model, model_parameters=None if client else (params(model) if params else model.parameters()),
        optimizer=client(model) if client else None, config=cfg)
    return model, engine_opt, train_engine(engine, batches())


@pytest.mark.parametrize("zero", [{"stage": 0}, {"stage": 1}, {"stage": 2}, {"stage": 3}, offload(2)],
                         ids=["stage0", "stage1", "stage2", "stage3", "offload2"])
def test_lion_trains_like_deepspeeds_lion_with_param_groups(zero):
    lion = {"type": "lion", "params": {"lr": 0.002, "betas": [0.9, 0.99], "weight_decay": 0.5}}
    model, optimizer, got = trained(zero, lion, lambda m: decay_groups(m, head_lr=0.001))
    assert [g["betas"] for g in optimizer.param_groups] == [(0.9, 0.99)] * 3
    reference = model_of()
    ref_opt = ReferenceLion(decay_groups(reference, head_lr=0.001), lr=0.002, betas=(0.9, 0.99), weight_decay=0.5)
    assert got == pytest.approx(train_torch(reference, ref_opt, batches()), rel=1e-5)
    assert_same_model(model, reference)


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_adagrad_trains_like_torch_adagrad_with_param_groups(stage):
    adagrad = {"type": "Adagrad", "params": {"lr": 0.05, "lr_decay": 0.1, "initial_accumulator_value": 0.2}}
    model, optimizer, got = trained({"stage": stage}, adagrad, lambda m: decay_groups(m, head_lr=0.02), seed=1)
    assert optimizer.param_groups[0]["eps"] == 1e-10
    reference = model_of(1)
    ref_opt = torch.optim.Adagrad(decay_groups(reference, head_lr=0.02), lr=0.05, lr_decay=0.1,
                                  initial_accumulator_value=0.2)
    assert got == pytest.approx(train_torch(reference, ref_opt, batches()), rel=1e-5)
    assert_same_model(model, reference)


def test_adagrad_under_offload_follows_deepspeed_cpu_adagrad_and_refuses_torch_only_settings():
    adagrad = {"type": "adagrad", "params": {"lr": 0.05, "weight_decay": 0.5}}
    model, _, got = trained(offload(1), adagrad, seed=2)
    reference = model_of(2)
    ref_opt = ReferenceCpuAdagrad(reference.parameters(), lr=0.05, weight_decay=0.5)
    assert got == pytest.approx(train_torch(reference, ref_opt, batches()), rel=1e-5)
    assert_same_model(model, reference)
    with pytest.raises(Exception, match=r"lr_decay and initial_accumulator_value are torch.optim.Adagrad's.*"
                                        r"DeepSpeedCPUAdagrad"):
        trained(offload(2), {"type": "Adagrad", "params": {"lr": 0.05, "lr_decay": 0.1}})


@pytest.mark.parametrize("make, reference, zero", [
    (lambda m: torch.optim.Adagrad(decay_groups(m), lr=0.05, lr_decay=0.05),
     lambda m: torch.optim.Adagrad(decay_groups(m), lr=0.05, lr_decay=0.05), {"stage": 2}),
    (lambda m: DeepSpeedCPUAdagrad(m.parameters(), lr=0.05, weight_decay=0.3),
     lambda m: DeepSpeedCPUAdagrad(m.parameters(), lr=0.05, weight_decay=0.3), offload(2)),
    (lambda m: FusedLion(decay_groups(m), lr=0.002, weight_decay=0.2),
     lambda m: ReferenceLion(decay_groups(m), lr=0.002, weight_decay=0.2), {"stage": 1}),
    (lambda m: DeepSpeedCPULion(m.parameters(), lr=0.002, betas=(0.8, 0.9)),
     lambda m: DeepSpeedCPULion(m.parameters(), lr=0.002, betas=(0.8, 0.9)), offload(1)),
], ids=["torch-adagrad", "cpu-adagrad", "fused-lion", "cpu-lion"])
def test_client_optimizers_translate_and_train_like_the_class_stepped_by_itself(make, reference, zero):
    model, _, got = trained(zero, client=make, seed=3)
    ref_model = model_of(3)
    assert got == pytest.approx(train_torch(ref_model, reference(ref_model), batches()), rel=1e-5)
    assert_same_model(model, ref_model)


def test_the_deepspeed_ops_classes_step_by_themselves_like_deepspeeds_kernels():
    for make, ref in ((lambda p: DeepSpeedCPULion(p, lr=0.01, weight_decay=0.1),
                       lambda p: ReferenceLion(p, lr=0.01, weight_decay=0.1)),
                      (lambda p: DeepSpeedCPUAdagrad(p, lr=0.1, weight_decay=0.1),
                       lambda p: ReferenceCpuAdagrad(p, lr=0.1, weight_decay=0.1))):
        a, b = model_of(4), model_of(4)
        train_torch(a, make(a.parameters()), batches())
        train_torch(b, ref(b.parameters()), batches())
        assert_same_model(a, b)
    # Where c is exactly zero DeepSpeed's two Lion kernels differ: the CPU one steps down, the CUDA one up.
    for cls, moved in ((DeepSpeedCPULion, -0.5), (FusedLion, 0.5)):
        p = torch.nn.Parameter(torch.zeros(3))
        p.grad = torch.zeros(3)
        cls([p], lr=0.5).step()
        assert p.tolist() == [moved] * 3


def test_a_lion_checkpoint_resumes_exactly_and_lamb_is_refused_with_the_choices(tmp_path):
    lion = {"type": "Lion", "params": {"lr": 0.002, "weight_decay": 0.1}}
    cfg = ds_config(2, optimizer=lion)
    model = model_of(5)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    data = batches()
    train_engine(engine, data[:3])
    engine.save_checkpoint(tmp_path)
    uninterrupted = train_engine(engine, data[3:])
    resumed_model = model_of(6)
    engine2, _, _, _ = deepspeed.initialize(model=resumed_model, model_parameters=resumed_model.parameters(),
                                            config=cfg)
    engine2.load_checkpoint(tmp_path)
    assert train_engine(engine2, data[3:]) == uninterrupted
    assert_same_model(resumed_model, model)
    with pytest.raises(Exception, match=r"optimizer.type: DeepSpeed's Lamb is not built in libdsrt \(FusedLamb's "
                                        r"trust ratio .*expected one of Adam, AdamW, SGD, Lion, Adagrad"):
        deepspeed.initialize(model=model, model_parameters=model.parameters(),
                             config=ds_config(0, optimizer={"type": "Lamb", "params": {"lr": 0.01}}))


def test_a_deepspeed_lion_checkpoint_converts_its_weights_only(tmp_path):
    """DeepSpeed's stage-0 checkpoint of a Lion run holds exp_avg without exp_avg_sq: the converter reads the
    weights and no moments (load_checkpoint then refuses load_optimizer_states=True with its hint)."""
    from dsrt.deepspeed_checkpoint import read
    torch.save({"module": {"w": torch.ones(2)}, "dp_world_size": 1,
                "optimizer": {"state": {0: {"step": 3, "exp_avg": torch.ones(2)}}, "param_groups": []}},
               tmp_path / "mp_rank_00_model_states.pt")
    ds = read(tmp_path, ["w"])
    assert ds["moments"] is None
    assert torch.equal(ds["params"]["w"], torch.ones(2))


def test_fused_lamb_steps_by_itself_with_deepspeeds_trust_ratio():
    """deepspeed.ops.lamb.FusedLamb's rule (csrc/lamb/fused_lamb_cuda_kernel.cu) on one step worked by hand."""
    from dsrt.ops.lamb import FusedLamb
    p = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    p.grad = torch.tensor([1.0, 1.0])
    opt = FusedLamb([p], lr=0.1)
    opt.step()
    # m = 0.1 g, v = 0.001 g^2, u = m / (sqrt(v) + eps); ratio |p| / |u|; step lr * sqrt(1 - b2) / (1 - b1)
    u = 0.1 / (0.001 ** 0.5 + 1e-8)
    ratio = 5.0 / (u * 2 ** 0.5)
    assert p.tolist() == pytest.approx([x - 0.1 * 0.001 ** 0.5 / 0.1 * ratio * u for x in (3.0, 4.0)], rel=1e-6)
    assert opt.get_lamb_coeffs() == [pytest.approx(ratio)]
    for start, coeff in (([1e-6, 0.0], 0.01), ([0.0, 0.0], 1.0), ([300.0, 400.0], 10.0)):
        q = torch.nn.Parameter(torch.tensor(start))
        q.grad = torch.tensor([1.0, 1.0])
        opt = FusedLamb([q], lr=0.1, bias_correction=False)
        opt.step()
        assert opt.get_lamb_coeffs() == [pytest.approx(coeff)]  # clamped to [min_coeff, max_coeff], 1 at |p| = 0
