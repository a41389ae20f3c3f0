"""zero_to_fp32 in one process (a world of one), so the torch 2 leg, which runs no dsrun suites, checks it
too: a ZeRO-3 checkpoint converted to pytorch_model.bin (torch.load with weights_only=True, torch >= 2.6's
default) and to model.safetensors (where safetensors is installed) equals the engine's weights. The 2-rank
case is test_zero_to_fp32.py."""

import importlib.util

import pytest
import torch

import dsrt
from dsrt.utils.zero_to_fp32 import convert_zero_checkpoint_to_fp32_state_dict


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("one")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    cfg = {"train_batch_size": 2, "optimizer": {"type": "Adam", "params": {"lr": 0.05}},
           "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}
    engine, *_ = dsrt.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    for step in range(2):
        loss = engine(torch.randn(2, 6, generator=torch.Generator().manual_seed(step))).pow(2).mean()
        engine.backward(loss)
        engine.step()
    engine.save_checkpoint(tmp / "ckpt")
    with dsrt.zero.GatheredParameters(list(model.parameters())):
        live = {n: p.detach().clone() for n, p in model.named_parameters()}
    return tmp, live


def assert_equal(state, live):
    assert sorted(state) == sorted(live)
    for name, tensor in live.items():
        assert state[name].dtype == torch.float32 and torch.equal(state[name], tensor), name


def test_pytorch_model_bin_loads_with_weights_only(saved):
    tmp, live = saved
    [path] = convert_zero_checkpoint_to_fp32_state_dict(tmp / "ckpt", tmp / "bin")
    assert_equal(torch.load(path, weights_only=True), live)
    assert (tmp / "ckpt" / "zero_to_fp32.py").exists()


def test_safe_serialization_writes_model_safetensors(saved):
    if importlib.util.find_spec("safetensors") is None:
        pytest.skip("safetensors is not installed in this interpreter (pip install safetensors)")
    from safetensors.torch import load_file
    tmp, live = saved
    [path] = convert_zero_checkpoint_to_fp32_state_dict(tmp / "ckpt", tmp / "st", safe_serialization=True)
    assert path.endswith("model.safetensors")
    assert_equal(load_file(path), live)


def test_safe_serialization_without_safetensors_names_the_package(saved, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.torch", None)
    tmp, _ = saved
    with pytest.raises(ImportError, match="pip install safetensors"):
        convert_zero_checkpoint_to_fp32_state_dict(tmp / "ckpt", tmp / "none", safe_serialization=True)
    assert not (tmp / "none").exists()
