"""dsrt loads checkpoints that real DeepSpeed wrote (python/dsrt/deepspeed_checkpoint.py) and continues with
the losses DeepSpeed gets when it continues from its own checkpoint.

DeepSpeed trains peer_train.py 6 steps on 2 ranks and saves; DeepSpeed resumes on 2 ranks for 3 more steps
(the reference); dsrt resumes from DeepSpeed's files on 2 ranks and on 1 rank (dsrt re-partitions). Stages
0, 1, 2 and 2 + offload: the whole state (weights, Adam moments and step, scheduler position, counters).
Stage 3: dsrt reads the weights only (compared with DeepSpeed's zero_to_fp32), and refuses a full load with
an error saying so. Same tolerance as test_deepspeed_peer.py.
"""

import os
import subprocess

import pytest
import torch

from peer_helpers import (DS_PYTHON, TOL, ds_config, losses, max_rel_diff, require_deepspeed, run_deepspeed,
                          run_dsrt, write_config)
from peer_train import TiedLm


def resume_losses(out):
    got = losses(out.stdout)
    assert len(got) == 3, out.stdout[-2000:]
    return got


@pytest.mark.parametrize("variant", ["z0", "z1", "z2", "z2_offload"])
def test_dsrt_continues_from_a_deepspeed_checkpoint(tmp_path, variant):
    require_deepspeed()
    cfg2 = write_config(tmp_path, "w2", ds_config(variant, 2))
    cfg1 = write_config(tmp_path, "w1", ds_config(variant, 1))
    ckpt = tmp_path / "ckpt"
    run_deepspeed(2, "--deepspeed_config", cfg2, "--save", ckpt)
    assert (ckpt / "latest").read_text().strip() == "global_step6"
    want = resume_losses(run_deepspeed(2, "--deepspeed_config", cfg2, "--load", ckpt, "--steps", 3))
    on_two = resume_losses(run_dsrt(2, "--deepspeed_config", cfg2, "--load", ckpt, "--steps", 3))
    on_one = resume_losses(run_dsrt(1, "--deepspeed_config", cfg1, "--load", ckpt, "--steps", 3))
    print(f"{variant}: DeepSpeed's resume {want}; dsrt on 2 ranks {max_rel_diff(on_two, want):.3g}, "
          f"on 1 rank {max_rel_diff(on_one, want):.3g}")
    assert max_rel_diff(on_two, want) <= TOL, f"dsrt on 2 ranks {on_two} vs DeepSpeed {want}"
    assert max_rel_diff(on_one, want) <= TOL, f"dsrt on 1 rank {on_one} vs DeepSpeed {want}"
    if variant == "z2":
        # The full-state comparison can fail: without the Adam moments and the schedule position (weights
        # only) the same continuation is far off, so a lost optimizer state would not pass.
        fresh = resume_losses(run_dsrt(2, "--deepspeed_config", cfg2, "--load", ckpt, "--steps", 3,
                                       "--load_module_only"))
        print(f"z2 weights only vs DeepSpeed's full resume: {max_rel_diff(fresh, want):.3g}")
        assert max_rel_diff(fresh, want) > 100 * TOL


def test_dsrt_loads_the_weights_of_a_deepspeed_zero3_checkpoint(tmp_path):
    """Stage 3: the weights, compared bit for bit with DeepSpeed's own zero_to_fp32 of the same checkpoint.
    (Not a resume compared with DeepSpeed's: DeepSpeed 0.19.8's load_module_only at stage 3 does not restore
    the weights, engine.py reloads the bit16 partitions it already has, so it continues from its initial
    weights, measured: the same losses as a fresh run.) A full load is refused, saying why."""
    require_deepspeed()
    cfg2 = write_config(tmp_path, "w2", ds_config("z3", 2))
    cfg1 = write_config(tmp_path, "w1", ds_config("z3", 1))
    ckpt = tmp_path / "ckpt"
    run_deepspeed(2, "--deepspeed_config", cfg2, "--save", ckpt)
    code = ("import sys, torch; from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint "
            "as g; torch.save({k: v.float().clone() for k, v in g(sys.argv[1]).items()}, sys.argv[2])")
    subprocess.run([DS_PYTHON, "-c", code, ckpt, tmp_path / "ds.pt"], check=True, capture_output=True,
                   env=dict(os.environ, DS_ACCELERATOR="cpu"))
    want = torch.load(tmp_path / "ds.pt")
    for nproc, cfg in ((2, cfg2), (1, cfg1)):
        dump = tmp_path / f"dsrt{nproc}.pt"
        run_dsrt(nproc, "--deepspeed_config", cfg, "--load", ckpt, "--load_module_only", "--steps", 0, "--dump", dump)
        got = torch.load(dump)
        assert set(got) <= set(want), f"{sorted(got)} vs DeepSpeed's {sorted(want)}"
        for name, t in got.items():
            assert torch.equal(t, want[name]), f"{nproc} ranks: {name} differs from DeepSpeed's zero_to_fp32"
    torch.manual_seed(3)  # peer_train.py's seed: the weights did change, they are not the initial ones
    fresh = TiedLm()
    assert not torch.equal(got["fc.weight"], dict(fresh.named_parameters())["fc.weight"].detach())
    out = run_dsrt(1, "--deepspeed_config", cfg1, "--load", ckpt, "--steps", 1, expect_rc=None)
    assert out.returncode != 0 and "not its optimizer states" in out.stdout + out.stderr
