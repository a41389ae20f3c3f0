"""Client torch optimizers dsrt has no built-in for (torch.optim.RMSprop, a script's own Optimizer subclass),
stepped over libdsrt's flat fp32 tensor as DeepSpeed steps them over its flat partitions (one process, a
world of one). Each run is compared with the same optimizer on a plain torch model.
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


def groups_of(model):
    """Two groups that differ in lr, weight decay and alpha, interleaved in the model's order (each owns
    several runs of the flat tensor)."""
    weights = [p for n, p in model.named_parameters() if n.endswith("weight") and not n.startswith("1.")]
    others = [p for n, p in model.named_parameters() if not (n.endswith("weight") and not n.startswith("1."))]
    return [{"params": weights, "weight_decay": 0.1}, {"params": others, "lr": 0.02, "alpha": 0.9}]


def rmsprop(model):
    return torch.optim.RMSprop(groups_of(model), lr=0.01, alpha=0.99, momentum=0.5)


class SignMomentum(torch.optim.Optimizer):
    """A script's own optimizer: bias-corrected momentum of the gradient's sign, with an int step and a
    per-parameter float in its state."""

    def __init__(self, params, lr=0.01, beta=0.9):
        super().__init__(params, dict(lr=lr, beta=beta))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["momentum"] = torch.zeros_like(p)
                state["step"] += 1
                state["momentum"].mul_(group["beta"]).add_(torch.sign(p.grad), alpha=1 - group["beta"])
                state["correction"] = 1.0 - group["beta"] ** state["step"]
                p.add_(state["momentum"] / state["correction"], alpha=-group["lr"])


def ds_config(stage=0, **extra):
    cfg = {"train_batch_size": 4, "zero_optimization": {"stage": stage}, "zero_allow_untested_optimizer": True}
    cfg.update(extra)
    return cfg


def offload_config():
    cfg = ds_config(2, zero_force_ds_cpu_optimizer=False)
    cfg["zero_optimization"]["offload_optimizer"] = {"device": "cpu"}
    return cfg


CONFIGS = {"stage0": lambda: ds_config(0), "stage1": lambda: ds_config(1), "stage2": lambda: ds_config(2),
           "stage3": lambda: ds_config(3), "offload": offload_config}


def batches(seed=3):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(4, 8, generator=gen) for _ in range(STEPS)]


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


@pytest.mark.parametrize("where", list(CONFIGS))
def test_a_client_rmsprop_with_groups_that_differ_trains_like_torch(where):
    model, reference = model_of(), model_of()
    client = rmsprop(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ZeRO's "untested optimizer" caution
        engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=client, config=CONFIGS[where]())
    assert optimizer.param_groups is client.param_groups
    # DeepSpeed's rewiring: every group now steps views of the flat fp32 tensor, not the model's tensors.
    views = [p for g in client.param_groups for p in g["params"]]
    assert all(v.dim() == 1 for v in views) and len(views) > 2
    assert sum(v.numel() for v in views) >= sum(p.numel() for p in model.parameters())
    got = train_engine(engine, batches())
    assert got == pytest.approx(train_torch(reference, rmsprop(reference), batches()), rel=1e-5)
    assert_same_model(model, reference)
    assert engine.get_lr() == [0.01, 0.02]


def test_a_custom_optimizer_and_a_torch_scheduler_on_it_train_like_torch():
    model, reference = model_of(1), model_of(1)
    client = SignMomentum(model.parameters(), lr=0.02)
    sched = torch.optim.lr_scheduler.StepLR(client, step_size=2, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine, _, _, scheduler = deepspeed.initialize(model=model, optimizer=client, lr_scheduler=sched,
                                                       config=ds_config(2))
    assert scheduler is sched
    ref_opt = SignMomentum(reference.parameters(), lr=0.02)
    ref_sched = torch.optim.lr_scheduler.StepLR(ref_opt, step_size=2, gamma=0.5)
    got = train_engine(engine, batches())
    assert got == pytest.approx(train_torch(reference, ref_opt, batches(), ref_sched), rel=1e-5)
    assert_same_model(model, reference)
    assert engine.get_lr() == pytest.approx(ref_sched.get_last_lr())


def test_zero_without_zero_allow_untested_optimizer_is_refused_as_deepspeed_does():
    model = model_of()
    cfg = ds_config(1)
    del cfg["zero_allow_untested_optimizer"]
    with pytest.raises(dsrt.DsrtError, match=r"untested optimizer(.|\n)*\"zero_allow_untested_optimizer\": true"):
        deepspeed.initialize(model=model, optimizer=rmsprop(model), config=cfg)


def test_offload_with_a_client_optimizer_needs_zero_force_ds_cpu_optimizer_false():
    model = model_of()
    cfg = offload_config()
    del cfg["zero_force_ds_cpu_optimizer"]
    with pytest.raises(dsrt.DsrtError, match=r"ZeRO-Offload with a client optimizer(.|\n)*"
                                             r"\"zero_force_ds_cpu_optimizer\": false"):
        deepspeed.initialize(model=model, optimizer=rmsprop(model), config=cfg)


@pytest.mark.parametrize("make", [rmsprop, lambda m: SignMomentum(m.parameters())], ids=["rmsprop", "custom"])
def test_a_client_optimizer_resumes_from_a_checkpoint_as_if_never_interrupted(tmp_path, make):
    def engine_of(seed):
        model = model_of(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine, _, _, _ = deepspeed.initialize(model=model, optimizer=make(model), config=ds_config(2))
        return model, engine

    data = batches()
    whole_model, whole = engine_of(4)
    expected = train_engine(whole, data)

    _, engine = engine_of(4)
    train_engine(engine, data[:3])
    engine.save_checkpoint(tmp_path)
    model2, engine2 = engine_of(9)
    engine2.load_checkpoint(tmp_path)
    assert train_engine(engine2, data[3:]) == pytest.approx(expected[3:], rel=1e-5)
    assert_same_model(model2, whole_model)


def test_state_that_is_not_elementwise_is_refused_at_save(tmp_path):
    class Summary(SignMomentum):
        @torch.no_grad()
        def step(self, closure=None):
            super().step(closure)
            for group in self.param_groups:
                for p in group["params"]:
                    self.state[p]["summary"] = torch.zeros(2)

    model = model_of()
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=Summary(model.parameters()), config=ds_config(0))
    train_engine(engine, batches()[:1])
    with pytest.raises(dsrt.DsrtError, match="state 'summary' of shape \\(2,\\)"):
        engine.save_checkpoint(tmp_path)


class PlainSgd(torch.optim.Optimizer):
    """p -= lr * grad: the update of the built-in SGD without momentum, as a script's own class."""

    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                p.add_(p.grad, alpha=-group["lr"])


@pytest.mark.parametrize("stage", [0, 2])
def test_at_bf16_a_client_optimizer_steps_the_fp32_masters_and_the_model_gets_the_bf16_copy(stage):
    def run(client):
        model = model_of(5)
        cfg = ds_config(stage, bf16={"enabled": True}, gradient_clipping=0.5)
        if client:
            engine, _, _, _ = deepspeed.initialize(model=model, optimizer=PlainSgd(model.parameters(), lr=0.05),
                                                   config=cfg)
        else:
            cfg["optimizer"] = {"type": "SGD", "params": {"lr": 0.05}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
        data = [x.bfloat16() for x in batches()]
        return train_engine(engine, data), model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (got, model), (want, reference) = run(True), run(False)
    assert model[0].weight.dtype == torch.bfloat16
    assert got == want
    assert_same_model(model, reference)


def test_an_object_that_is_not_a_torch_optimizer_is_still_refused_naming_its_type():
    model = model_of()
    with pytest.raises(dsrt.DsrtError, match="client optimizer of type builtins.object"):
        deepspeed.initialize(model=model, optimizer=object(), config=ds_config(0))


@pytest.mark.parametrize("where", ["stage0", "stage2"])
def test_an_optimizer_factory_gets_model_parameters_and_trains_like_the_optimizer_it_returns(where):
    """DeepSpeed's initialize(optimizer=<callable>): called with model_parameters (a list, as given) once the
    module is on its device; what it returns is the client optimizer from then on."""
    model, reference = model_of(), model_of()
    seen = []

    def factory(params):
        seen.append([len(g["params"]) for g in params])  # now: the optimizer rewires these dicts
        return torch.optim.RMSprop(params, lr=0.01, alpha=0.99, momentum=0.5)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=factory, config=CONFIGS[where](),
                                                       model_parameters=groups_of(model))
    assert seen == [[2, 4]]
    assert optimizer.param_groups[1]["alpha"] == 0.9  # the group's own value, kept by the factory's optimizer
    got = train_engine(engine, batches())
    assert got == pytest.approx(train_torch(reference, rmsprop(reference), batches()), rel=1e-5)
    assert_same_model(model, reference)


def test_an_optimizer_factory_without_model_parameters_gets_the_modules_and_may_name_a_built_in():
    """A factory returning torch's AdamW is translated to the built-in AdamW like an AdamW object would be."""
    model, reference = model_of(2), model_of(2)
    seen = []

    def factory(params):
        seen.append(params)
        return torch.optim.AdamW(params, lr=0.01, weight_decay=0.1)

    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=factory, config={"train_batch_size": 4})
    assert isinstance(seen[0], list) and [p is q for p, q in zip(seen[0], model.parameters())] == [True] * 6
    got = train_engine(engine, batches())
    want = train_torch(reference, torch.optim.AdamW(reference.parameters(), lr=0.01, weight_decay=0.1), batches())
    assert got == pytest.approx(want, rel=1e-5)


def test_a_factory_that_returns_no_optimizer_is_refused_naming_it():
    with pytest.raises(dsrt.DsrtError, match=r"initialize\(optimizer=.*make_it\): the callable returned dict, "
                                             r"not a torch.optim.Optimizer"):
        def make_it(params):
            return {"params": params}
        deepspeed.initialize(model=model_of(), optimizer=make_it, config={"train_batch_size": 4})


@pytest.mark.parametrize("optimizer", ["factory", "config block"])
def test_a_scheduler_object_without_an_optimizer_object_is_deepspeeds_assertion(optimizer):
    """DeepSpeed asserts a scheduler object comes with the optimizer object it is bound to (the engine would
    schedule an optimizer it never steps)."""
    model = model_of()
    stray = torch.optim.lr_scheduler.StepLR(torch.optim.SGD(model.parameters(), lr=0.1), step_size=1)
    config = {"train_batch_size": 4}
    client = None
    if optimizer == "factory":
        client = lambda params: torch.optim.AdamW(params, lr=0.01)  # noqa: E731
    else:
        config["optimizer"] = {"type": "Adam", "params": {"lr": 0.01}}
    with pytest.raises(AssertionError, match="is not instantiated but Client LR Scheduler is instantiated"):
        deepspeed.initialize(model=model, optimizer=client, lr_scheduler=stray, config=config)


def test_a_scheduler_factory_gets_the_optimizer_a_factory_built():
    model = model_of()
    engine, optimizer, _, scheduler = deepspeed.initialize(
        model=model, optimizer=lambda params: torch.optim.AdamW(params, lr=0.01),
        lr_scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5),
        config={"train_batch_size": 4})
    assert isinstance(scheduler, torch.optim.lr_scheduler.StepLR) and scheduler.optimizer is optimizer
    train_engine(engine, batches()[:2])
    assert engine.get_lr() == pytest.approx([0.0025])
