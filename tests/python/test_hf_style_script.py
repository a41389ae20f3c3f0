"""Through dsrun: a script that brings its own AdamW param groups and LambdaLR scheduler (Hugging Face /
DeepSpeed-Chat style) trains the same on 2 ranks at ZeRO stages 1-3 (and offload) as on one process."""

import pytest
import torch

from conftest import REPO, assert_close_lists, losses, assert_close_tensors, run_dsrun

SCRIPT = REPO / "tests" / "python" / "hf_style_train.py"


def ds_config(stage, offload=False):
    zero = {"stage": stage, "reduce_bucket_size": 500, "allgather_bucket_size": 500,
            "stage3_param_persistence_threshold": 16}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu"}
    return {"train_batch_size": 8, "gradient_accumulation_steps": 2, "zero_optimization": zero}


def train(tmp_path, write_config, nproc, cfg, tag):
    dump = tmp_path / f"{tag}.pt"
    out = run_dsrun(nproc, SCRIPT, "--deepspeed_config", write_config(cfg), "--dump_params", dump)
    lrs = [line.split(" lr ")[1] for line in out.stdout.splitlines() if " lr " in line]
    return losses(out.stdout), lrs, torch.load(dump)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    import json
    tmp = tmp_path_factory.mktemp("reference")
    cfg = tmp / "ds_config.json"
    cfg.write_text(json.dumps(ds_config(0)))
    out = run_dsrun(1, SCRIPT, "--deepspeed_config", cfg, "--dump_params", tmp / "ref.pt")
    lrs = [line.split(" lr ")[1] for line in out.stdout.splitlines() if " lr " in line]
    return losses(out.stdout), lrs, torch.load(tmp / "ref.pt")


@pytest.mark.parametrize("variant", ["stage1_offload", "stage2", "stage3"])
def test_groups_and_client_scheduler_on_two_ranks_reproduce_one_process(tmp_path, write_config, reference, variant):
    stage, offload = int(variant[5]), variant.endswith("offload")
    ref_losses, ref_lrs, ref_params = reference
    got_losses, got_lrs, got_params = train(tmp_path, write_config, 2, ds_config(stage, offload), variant)
    assert len(ref_losses) == 6
    # The schedule: warmup over 2 steps then linear decay, per group (the last layer at its own lr).
    assert ref_lrs[0] == "0.005,0.005,0.0015" and ref_lrs[-1] == "0,0,0"
    assert got_lrs == ref_lrs
    assert_close_lists(got_losses, ref_losses, rel=1e-5)
    assert_close_tensors(got_params, ref_params, rel=1e-5, what=variant)
