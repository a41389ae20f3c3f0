"""Through dsrun: a bf16 ZeRO-2 checkpoint saved by 1 rank with save_latest=False fine-tunes on 2 ranks
with load_module_only=True (DeepSpeed's warm start): the full weights load at the new world size, the
engine's counters and optimizer stay fresh, and its steps equal a fresh engine's from those weights."""

import json

from conftest import REPO, run_dsrun

SCRIPT = REPO / "tests" / "python" / "partial_load_worker.py"
CONFIG = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
          "optimizer": {"type": "Adam", "params": {"lr": 0.01}},
          "bf16": {"enabled": True},
          "zero_optimization": {"stage": 2, "reduce_bucket_size": 40, "allgather_bucket_size": 40}}


def test_module_only_load_of_a_one_rank_checkpoint_on_two_ranks(tmp_path, write_config):
    cfg = write_config(CONFIG)
    ckpt = tmp_path / "ckpt"
    run_dsrun(1, SCRIPT, "pretrain", "--ckpt", ckpt, "--deepspeed_config", cfg)
    assert (ckpt / "pretrained").is_dir() and not (ckpt / "latest").exists()
    out = run_dsrun(2, SCRIPT, "finetune", "--ckpt", ckpt, "--deepspeed_config", cfg).stdout
    client = {"run": "pretrain", "global_steps": 3, "global_samples": 6, "skipped_steps": 0, "dp_world_size": 1,
              "mp_world_size": 1}
    for rank in range(2):
        assert (f"rank {rank} world 2 loaded pretrained steps 0 masters_rounded True "
                f"client {json.dumps(client, sort_keys=True)}") in out, out
        assert f"rank {rank} steps 2 same_as_fresh_engine True" in out, out
