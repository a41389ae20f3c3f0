"""Real DeepSpeed and dsrt run the same DeepSpeed script (peer_train.py: tied weights, no-decay param groups,
gradient accumulation, clipping, WarmupLR, AdamW, fp32) on 2 ranks at ZeRO stages 0-3 and with offload, and
print the same per-step losses.

Tolerance: TOL relative per step. Both runs do the same arithmetic in fp32 but not in the same order:
gradients are summed across ranks by different collectives (DeepSpeed's bucketed all-reduce or
reduce-scatter vs dsrt's), the two may run different torch builds (and so different BLAS kernels), and
DeepSpeed's offload Adam is its own AVX kernel. Such reordering changes a loss by a few float32 ulps per step
(~1e-7 relative); Adam divides by sqrt(v), which turns the noise of a near-zero gradient into a visible but
small step, so after 6 steps differences stay well below 1e-5, while any real difference (an lr 10% off, a
missed clip, a lost accumulation micro-batch, a wrong weight decay group) moves losses by 1e-3 or more
(test_tolerance_detects_a_changed_lr checks that the tolerance notices the smallest of these).
"""

import pytest

from peer_helpers import (TOL, VARIANTS, ds_config, losses, max_rel_diff, require_deepspeed, run_deepspeed,
                          run_dsrt, write_config)

# Variants where DeepSpeed 0.19.8 on 2 CPU ranks does NOT reproduce its own single process (there dsrt is
# compared with one process instead). The test asserts each entry still differs, so a fixed DeepSpeed shows up.
DEEPSPEED_DIFFERS = {}


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """DeepSpeed's and dsrt's losses on one process (stage 0), the reference of every variant."""
    versions = require_deepspeed()
    tmp = tmp_path_factory.mktemp("one")
    cfg = write_config(tmp, "z0_w1", ds_config("z0", 1))
    ds = losses(run_deepspeed(1, "--deepspeed_config", cfg).stdout)
    ours = losses(run_dsrt(1, "--deepspeed_config", cfg).stdout)
    print(f"deepspeed/torch {versions}: one process, dsrt vs DeepSpeed max rel diff {max_rel_diff(ours, ds):.3g}")
    assert len(ds) == 6
    assert max_rel_diff(ours, ds) <= TOL, f"one process: dsrt {ours} vs DeepSpeed {ds}"
    return ds


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_two_ranks_dsrt_equals_deepspeed(tmp_path, one_process, variant):
    cfg = write_config(tmp_path, variant, ds_config(variant, 2))
    ds_out = run_deepspeed(2, "--deepspeed_config", cfg).stdout
    ds, ours = losses(ds_out), losses(run_dsrt(2, "--deepspeed_config", cfg).stdout)
    # DeepSpeed really ran the variant: ZeRO's optimizer, and offload through its own CPU Adam.
    _, offload_opt, offload_param = VARIANTS[variant]
    assert (f"over {'DeepSpeedCPUAdam' if offload_opt else 'AdamW'} offload_optimizer {offload_opt} "
            f"offload_param {offload_param}") in ds_out, ds_out[-2000:]
    ds_vs_one, ours_vs_one = max_rel_diff(ds, one_process), max_rel_diff(ours, one_process)
    print(f"{variant}: dsrt vs DeepSpeed {max_rel_diff(ours, ds):.3g}, DeepSpeed vs one process {ds_vs_one:.3g}, "
          f"dsrt vs one process {ours_vs_one:.3g}")
    if variant in DEEPSPEED_DIFFERS:
        assert ds_vs_one > TOL, f"{variant}: DeepSpeed now reproduces one process: drop it from DEEPSPEED_DIFFERS"
        assert ours_vs_one <= TOL, f"{variant}: dsrt {ours} vs one process {one_process}"
        return
    assert ds_vs_one <= TOL, f"{variant}: DeepSpeed {ds} vs its one process {one_process}"
    assert max_rel_diff(ours, ds) <= TOL, f"{variant}: dsrt {ours} vs DeepSpeed {ds}"


def test_tolerance_detects_a_changed_lr(tmp_path, one_process):
    """The comparison can fail: the same run with warmup_max_lr 10% higher is far outside TOL."""
    cfg = ds_config("z0", 1)
    cfg["scheduler"]["params"]["warmup_max_lr"] *= 1.1
    ours = losses(run_dsrt(1, "--deepspeed_config", write_config(tmp_path, "lr", cfg)).stdout)
    assert max_rel_diff(ours, one_process) > 100 * TOL
