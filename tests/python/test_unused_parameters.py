"""zero_optimization.ignore_unused_parameters, as DeepSpeed's TestStage2IgnoreUnusedParameters: with it false,
ZeRO 1/2 with CPU offload fail a step where a trainable parameter got no gradient since the last step, with
DeepSpeed's AssertionError (naming the parameters here); true (the default), or without offload, or at stage 3,
they train. One process."""

import pytest
import torch

import dsrt as deepspeed


class UnusedParametersModel(torch.nn.Module):
    """DeepSpeed's tests/unit/simple_model.py model of the same name: a Linear that forward never uses."""

    def __init__(self, hidden=4, use_extra_on_first=False):
        super().__init__()
        self.linears = torch.nn.ModuleList([torch.nn.Linear(hidden, hidden) for _ in range(2)])
        self.unused_linear = torch.nn.Linear(hidden, hidden)
        self.use_extra_on_first = use_extra_on_first
        self.calls = 0

    def forward(self, x, y):
        for layer in self.linears:
            x = layer(x)
        if self.use_extra_on_first and self.calls % 2 == 0:
            x = self.unused_linear(x)
        self.calls += 1
        return torch.nn.functional.cross_entropy(x, y)


def train(stage, ignore, offload, model=None, steps=3):
    zero = {"stage": stage, "ignore_unused_parameters": ignore}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu"}
    cfg = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2, "zero_optimization": zero,
           "optimizer": {"type": "Adam", "params": {"lr": 1e-3}}, "bf16": {"enabled": True}}
    torch.manual_seed(0)
    model = model or UnusedParametersModel()
    engine = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)[0]
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps * 2):
        loss = engine(torch.randn(2, 4, generator=gen).bfloat16(), torch.randint(0, 4, (2,), generator=gen))
        engine.backward(loss)
        engine.step()
    return engine


@pytest.mark.parametrize("stage", [1, 2])
def test_an_unused_parameter_fails_the_step_with_deepspeeds_assertion(stage):
    with pytest.raises(AssertionError) as caught:
        train(stage, ignore=False, offload=True)
    message = caught.value.args[0]
    assert "ignore_unused_parameters" in message  # what DeepSpeed's test checks
    assert "not used in producing loss: unused_linear.weight, unused_linear.bias." in message, message


@pytest.mark.parametrize("stage,ignore,offload", [(2, True, True), (1, True, True), (2, False, False),
                                                  (1, False, False), (3, False, True)])
def test_otherwise_the_unused_parameter_is_ignored_as_in_deepspeed(stage, ignore, offload):
    assert train(stage, ignore, offload).global_steps == 3


def test_a_parameter_used_in_one_micro_step_of_the_window_counts_as_used():
    engine = train(2, ignore=False, offload=True, model=UnusedParametersModel(use_extra_on_first=True))
    assert engine.global_steps == 3
