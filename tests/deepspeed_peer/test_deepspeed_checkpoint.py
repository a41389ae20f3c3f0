"""dsrt loads checkpoints that real DeepSpeed wrote (python/dsrt/deepspeed_checkpoint.py) and continues with
the losses DeepSpeed gets when it continues from its own checkpoint.

DeepSpeed trains peer_train.py 6 steps on 2 ranks and saves; DeepSpeed resumes on 2 ranks for 3 more steps
(the reference); dsrt resumes from DeepSpeed's files on 2 ranks and on 1 rank (dsrt re-partitions). Stages
0, 1, 2 and 2 + offload: the whole state (weights, Adam moments and step, scheduler position, counters).
Stage 3: dsrt reads the weights only (load_module_only, compared with DeepSpeed's own load_module_only
resume), and refuses a full load with an error saying so. Same tolerance as test_deepspeed_peer.py.
"""

import json

import pytest

from peer_helpers import TOL, ds_config, losses, max_rel_diff, require_deepspeed, run_deepspeed, run_dsrt


def write(tmp_path, name, cfg):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return path


def resume_losses(out):
    got = losses(out.stdout)
    assert len(got) == 3, out.stdout[-2000:]
    return got


@pytest.mark.parametrize("variant", ["z0", "z1", "z2", "z2_offload", "z3"])
def test_dsrt_continues_from_a_deepspeed_checkpoint(tmp_path, variant):
    require_deepspeed()
    cfg2, cfg1 = write(tmp_path, "w2", ds_config(variant, 2)), write(tmp_path, "w1", ds_config(variant, 1))
    ckpt = tmp_path / "ckpt"
    run_deepspeed(2, "--deepspeed_config", cfg2, "--save", ckpt)
    assert (ckpt / "latest").read_text().strip() == "global_step6"
    only = ["--load_module_only"] if variant == "z3" else []
    want = resume_losses(run_deepspeed(2, "--deepspeed_config", cfg2, "--load", ckpt, "--steps", 3, *only))
    on_two = resume_losses(run_dsrt(2, "--deepspeed_config", cfg2, "--load", ckpt, "--steps", 3, *only))
    on_one = resume_losses(run_dsrt(1, "--deepspeed_config", cfg1, "--load", ckpt, "--steps", 3, *only))
    print(f"{variant}{' (weights only)' if only else ''}: DeepSpeed's resume {want}; dsrt on 2 ranks "
          f"{max_rel_diff(on_two, want):.3g}, on 1 rank {max_rel_diff(on_one, want):.3g}")
    assert max_rel_diff(on_two, want) <= TOL, f"dsrt on 2 ranks {on_two} vs DeepSpeed {want}"
    assert max_rel_diff(on_one, want) <= TOL, f"dsrt on 1 rank {on_one} vs DeepSpeed {want}"
    if variant == "z2":
        # The full-state comparison can fail: without the Adam moments and the schedule position (weights
        # only) the same continuation is far off, so a lost optimizer state would not pass.
        fresh = resume_losses(run_dsrt(2, "--deepspeed_config", cfg2, "--load", ckpt, "--steps", 3,
                                       "--load_module_only"))
        assert max_rel_diff(fresh, want) > 100 * TOL
    if variant == "z3":
        out = run_dsrt(1, "--deepspeed_config", cfg1, "--load", ckpt, "--steps", 1, expect_rc=None)
        assert out.returncode != 0 and "not its optimizer states" in out.stdout + out.stderr
