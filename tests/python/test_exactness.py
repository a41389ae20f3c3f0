"""Through dsrun: 2 and 4 ranks of examples/train_mlp.py reproduce one process at every ZeRO stage and
offload variant (fp32, accumulation, clipping), and the Python front equals the C++ front (train_mlp)."""

import pytest
import torch

from conftest import BUILD, REPO, assert_close_lists, assert_close_tensors, losses, run_dsrun

SCRIPT = REPO / "examples" / "train_mlp.py"
MODEL = ["--hidden", "48", "--layers", "3", "--steps", "4", "--seed", "11"]


def ds_config(stage, offload_optimizer=False, offload_param=False):
    zero = {"stage": stage, "reduce_bucket_size": 1000, "allgather_bucket_size": 1000,
            "stage3_prefetch_bucket_size": 2000, "stage3_param_persistence_threshold": 48}
    if offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu"}
    if offload_param:
        zero["offload_param"] = {"device": "cpu"}
    return {"train_batch_size": 16, "gradient_accumulation_steps": 2, "gradient_clipping": 0.05,
            "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}},
            "zero_optimization": zero}


VARIANTS = {
    "stage0": ds_config(0),
    "stage1": ds_config(1),
    "stage2": ds_config(2),
    "stage3": ds_config(3),
    "stage1_offload": ds_config(1, offload_optimizer=True),
    "stage2_offload": ds_config(2, offload_optimizer=True),
    "stage3_offload_both": ds_config(3, offload_optimizer=True, offload_param=True),
}


def train(tmp_path, write_config, nproc, cfg, tag):
    dump = tmp_path / f"{tag}.pt"
    out = run_dsrun(nproc, SCRIPT, "--deepspeed_config", write_config(cfg), *MODEL, "--dump_params", dump)
    return losses(out.stdout), torch.load(dump)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    import json
    tmp = tmp_path_factory.mktemp("reference")
    cfg = tmp / "ds_config.json"
    cfg.write_text(json.dumps(ds_config(0)))
    out = run_dsrun(1, SCRIPT, "--deepspeed_config", cfg, *MODEL, "--dump_params", tmp / "ref.pt")
    return losses(out.stdout), torch.load(tmp / "ref.pt"), cfg


@pytest.mark.parametrize("nproc", [2, 4])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_ranks_reproduce_one_process(tmp_path, write_config, reference, variant, nproc):
    ref_losses, ref_params, _ = reference
    got_losses, got_params = train(tmp_path, write_config, nproc, VARIANTS[variant], f"{variant}_{nproc}")
    assert len(ref_losses) == 4
    assert_close_lists(got_losses, ref_losses, rel=1e-5)
    assert_close_tensors(got_params, ref_params, rel=1e-5, what=variant)


def test_python_front_equals_the_cpp_api_on_the_same_mlp(reference):
    ref_losses, _, cfg = reference
    cpp = BUILD / "examples" / "train_mlp"
    if not cpp.exists():
        pytest.fail(f"{cpp} not built")
    out = run_dsrun(1, cpp, "--deepspeed_config", cfg, *MODEL, python=None)
    assert_close_lists(losses(out.stdout), ref_losses, rel=1e-5)


def test_lion_partitioned_on_2_ranks_reproduces_one_process(tmp_path, write_config):
    """Lion's flat optimizer on ZeRO-2's partitions (each rank its own slice of exp_avg) against one process."""
    lion = {"type": "Lion", "params": {"lr": 0.002, "betas": [0.9, 0.99], "weight_decay": 0.1}}
    one_losses, one_params = train(tmp_path, write_config, 1, dict(ds_config(0), optimizer=lion), "lion_1")
    got_losses, got_params = train(tmp_path, write_config, 2, dict(ds_config(2), optimizer=lion), "lion_2")
    assert_close_lists(got_losses, one_losses, rel=1e-5)
    assert_close_tensors(got_params, one_params, rel=1e-5, what="lion stage2")
