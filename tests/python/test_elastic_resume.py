"""Through dsrun: examples/train_mlp.py --checkpoint_dir resumes at another world size. With an
elasticity block the global batch stays 24 while the job runs 4 ranks to step 2 and 3 ranks to step 4; each
rank prints its start line with the world size and restart count, and the losses equal one process."""

from conftest import REPO, assert_close_lists, losses, run_dsrun

SCRIPT = REPO / "examples" / "train_mlp.py"
MODEL = ["--hidden", "48", "--layers", "3", "--seed", "11"]
CONFIG = {
    "elasticity": {"enabled": True, "max_train_batch_size": 24, "micro_batch_sizes": [2, 4], "min_gpus": 1,
                   "max_gpus": 4, "version": 0.1},
    "gradient_clipping": 0.05,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}},
    "zero_optimization": {"stage": 2, "reduce_bucket_size": 1000, "allgather_bucket_size": 1000},
}


def start_lines(stdout):
    """The start lines, without dsrun's 'host:rank |' prefix, sorted."""
    return sorted(line.split("| ", 1)[-1] for line in stdout.splitlines()
                  if "starting fresh" in line or "resumed from step" in line)


def test_checkpoint_dir_resumes_on_another_world_size_with_the_same_losses(tmp_path, write_config):
    cfg = write_config(CONFIG)
    ckpt = tmp_path / "ckpt"
    whole = run_dsrun(1, SCRIPT, "--deepspeed_config", cfg, *MODEL, "--steps", "4")
    # dsrun sets the restart counter on every job, continuing one it inherits
    assert start_lines(whole.stdout) == ["starting fresh rank 0 world_size 1 restart_count 0 (DSRUN_RESTART_COUNT)"]
    first = run_dsrun(4, SCRIPT, "--deepspeed_config", cfg, *MODEL, "--steps", "2", "--checkpoint_dir", ckpt,
                      "--save_every", "2", env={"DSRUN_RESTART_COUNT": "0"})
    assert start_lines(first.stdout) == [
        f"starting fresh rank {r} world_size 4 restart_count 0 (DSRUN_RESTART_COUNT)" for r in range(4)]
    rest = run_dsrun(3, SCRIPT, "--deepspeed_config", cfg, *MODEL, "--steps", "4", "--checkpoint_dir", ckpt,
                     "--save_every", "2", env={"TORCHELASTIC_RESTART_COUNT": "1"})
    assert start_lines(rest.stdout) == [
        f"resumed from step 2 rank {r} world_size 3 restart_count 1 (DSRUN_RESTART_COUNT)" for r in range(3)]
    assert (ckpt / "latest").read_text().strip() == "global_step4"
    assert_close_lists(losses(first.stdout) + losses(rest.stdout), losses(whole.stdout), rel=1e-5)
