"""Weights torch can load, from a ZeRO-3 checkpoint saved by 2 ranks (through dsrun): every consolidated
output (dsrt.utils.zero_to_fp32's functions and `python -m`, the zero_to_fp32.py copied into the checkpoint
folder, ds_to_fp32, safetensors where installed) opens with plain torch.load / safetensors and equals the
weights the engine held when it saved."""

import importlib.util
import os
import subprocess
import sys

import pytest
import torch

from conftest import BUILD, REPO, run_dsrun

WORKER = REPO / "tests" / "python" / "zero_to_fp32_worker.py"
CONFIG = {"train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "Adam", "params": {"lr": 0.05}},
          "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """(checkpoint dir, live weights by name) of one 2-rank ZeRO-3 run, shared by the tests below."""
    tmp = tmp_path_factory.mktemp("z3")
    cfg = tmp / "ds_config.json"
    cfg.write_text(__import__("json").dumps(CONFIG))
    ckpt = tmp / "ckpt"
    run_dsrun(2, WORKER, "--ckpt", ckpt, "--deepspeed_config", cfg)
    return ckpt, torch.load(ckpt / "live.pt")


def assert_live(state, live):
    """A plain {name: tensor} of fp32 weights equal to the live ones; the tied weight appears once."""
    assert isinstance(state, dict) and all(isinstance(v, torch.Tensor) for v in state.values())
    assert sorted(state) == ["embed.weight", "hidden.bias", "hidden.weight"]
    for name, tensor in state.items():
        assert tensor.dtype == torch.float32
        assert torch.equal(tensor, live[name]), name


def load(path):
    """torch.load as a cautious user calls it (torch >= 2.6's default): only tensors and plain containers."""
    return torch.load(path, weights_only=True)


def run_python(*args):
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


def test_the_functions_return_and_write_the_live_weights(checkpoint, tmp_path):
    from dsrt.utils.zero_to_fp32 import (convert_zero_checkpoint_to_fp32_state_dict,
                                         get_fp32_state_dict_from_zero_checkpoint,
                                         load_state_dict_from_zero_checkpoint)
    ckpt, live = checkpoint
    assert_live(get_fp32_state_dict_from_zero_checkpoint(ckpt), live)
    written = convert_zero_checkpoint_to_fp32_state_dict(ckpt, tmp_path / "out")
    assert written == [str(tmp_path / "out" / "pytorch_model.bin")]
    assert_live(load(written[0]), live)
    model = __import__("zero_to_fp32_worker").Tied()
    load_state_dict_from_zero_checkpoint(model, ckpt)
    assert torch.equal(model.out.weight, live["embed.weight"])


def test_python_m_writes_pytorch_model_bin_or_the_named_file(checkpoint, tmp_path):
    ckpt, live = checkpoint
    proc = run_python("-m", "dsrt.utils.zero_to_fp32", ckpt, tmp_path / "dir")
    assert proc.returncode == 0, proc.stderr
    assert_live(load(tmp_path / "dir" / "pytorch_model.bin"), live)
    proc = run_python("-m", "dsrt.utils.zero_to_fp32", ckpt, tmp_path / "model.bin", "-t", "global_step3")
    assert proc.returncode == 0, proc.stderr
    assert_live(load(tmp_path / "model.bin"), live)


def test_the_script_in_the_checkpoint_folder_converts_it(checkpoint, tmp_path):
    ckpt, live = checkpoint
    script = ckpt / "zero_to_fp32.py"
    assert os.access(script, os.X_OK)
    proc = run_python(script, ckpt, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert_live(load(tmp_path / "out" / "pytorch_model.bin"), live)


def test_ds_to_fp32_writes_a_file_torch_loads(checkpoint, tmp_path):
    ckpt, live = checkpoint
    tool = BUILD / "runtime" / "checkpoint" / "ds_to_fp32"
    if not tool.exists():
        pytest.fail(f"{tool} not built")
    proc = subprocess.run([str(tool), str(ckpt), str(tmp_path / "w.bin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert_live(load(tmp_path / "w.bin"), live)


def test_safe_serialization_writes_safetensors(checkpoint, tmp_path):
    if importlib.util.find_spec("safetensors") is None:
        pytest.skip("safetensors is not installed in this interpreter (pip install safetensors)")
    from safetensors.torch import load_file
    ckpt, live = checkpoint
    proc = run_python("-m", "dsrt.utils.zero_to_fp32", ckpt, tmp_path / "st", "--safe_serialization")
    assert proc.returncode == 0, proc.stderr
    assert_live(load_file(str(tmp_path / "st" / "model.safetensors")), live)


def test_a_missing_checkpoint_fails_with_its_path(tmp_path):
    proc = run_python("-m", "dsrt.utils.zero_to_fp32", tmp_path / "nope", tmp_path / "out")
    assert proc.returncode == 1
    assert "zero_to_fp32: " in proc.stderr and str(tmp_path / "nope") in proc.stderr
    assert not (tmp_path / "out").exists()


def test_safe_get_full_and_no_sync_across_two_ranks(checkpoint):
    # The worker's engine_api.pt (see zero_to_fp32_worker.check_engine_api).
    ckpt, live = checkpoint
    results = torch.load(ckpt / "engine_api.pt")
    for name, value in results["z3_fp32"].items():  # ZeRO-3 fragments of both ranks gathered, every rank
        assert torch.equal(value, live[name]), name
    for name, value in results["z3_grad"].items():  # the averaged gradient, against plain torch on 2 ranks
        torch.testing.assert_close(value, results["z3_grad_reference"][name], rtol=1e-5, atol=1e-7)
    local, reduced = results["no_sync_local"], results["no_sync_reduced"]
    assert not torch.allclose(local[0], local[1])  # inside no_sync each rank kept its own gradient
    assert torch.equal(reduced[0], reduced[1])  # the next backward reduced both micro-batches
    torch.testing.assert_close(reduced[0], results["no_sync_reference"], rtol=1e-5, atol=1e-7)
