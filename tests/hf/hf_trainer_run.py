"""One rank of a Hugging Face Trainer run on a tiny GPT-2 built from a config (no download), synthetic tokens.

Unchanged Trainer code: `deepspeed` is whichever package the interpreter has (real DeepSpeed, or dsrt's
compatibility distribution). For each configuration named on the command line it trains 4 optimizer steps
(gradient accumulation 2, a checkpoint every 2 steps), resumes a fresh Trainer from the step-2 checkpoint to step
4, saves the model, evaluates, and reloads the saved model with from_pretrained. Rank 0 appends one JSON line per
configuration to --out. Run by test_hf_trainer.py through dsrun; one process runs every configuration, because
importing transformers costs more than the training.
"""

import argparse
import gc
import json
import os

import torch
import torch.distributed.nn  # noqa: F401  (before any group: see release_*_group below)

CONFIGS = {
    "zero0": {"stage": 0},
    "zero2": {"stage": 2},
    "zero3": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
    "zero2_offload": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
}


def ds_config(name):
    # What a Hugging Face user writes: "auto" everywhere the Trainer fills in, no optimizer block (the Trainer's
    # own AdamW and linear schedule, which also spares DeepSpeed's JIT-compiled CPU Adam).
    zero = dict(CONFIGS[name])
    if zero["stage"] > 0:
        zero.update({"reduce_bucket_size": "auto", "allgather_bucket_size": 5e8})
    if zero["stage"] == 3:
        zero.update({"stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto"})
    return {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "train_batch_size": "auto", "gradient_clipping": "auto", "zero_optimization": zero,
            "zero_force_ds_cpu_optimizer": False, "steps_per_print": 1000}


class Tokens(torch.utils.data.Dataset):
    """Fixed pseudo-random token sequences; labels = inputs (causal LM loss)."""

    def __init__(self, n, length, vocab, seed):
        g = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(cfg)


def trainer_for(name, out_dir, model):
    from transformers import Trainer, TrainerCallback, TrainingArguments

    class Losses(TrainerCallback):
        def __init__(self):
            self.losses = {}

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.losses[state.global_step] = logs["loss"]

    args = TrainingArguments(output_dir=out_dir, deepspeed=ds_config(name), per_device_train_batch_size=2,
                             per_device_eval_batch_size=2, gradient_accumulation_steps=2, max_steps=4,
                             learning_rate=1e-2, warmup_steps=1, weight_decay=0.01, max_grad_norm=1.0,
                             logging_steps=1, save_steps=2, save_strategy="steps", report_to=[], seed=0,
                             use_cpu=not torch.cuda.is_available(), dataloader_num_workers=0,
                             disable_tqdm=True)
    losses = Losses()
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(32, 16, 64, 1),
                      eval_dataset=Tokens(8, 16, 64, 2), callbacks=[losses])
    return trainer, losses


def reset_accelerate():
    # One process, several Trainers with different DeepSpeed configs: Accelerate keeps its state in singletons.
    from accelerate.state import AcceleratorState, GradientState
    AcceleratorState._reset_state(reset_partial_state=False)
    GradientState._reset_state()


def run(name, root):
    from transformers import GPT2LMHeadModel
    out_dir = os.path.join(root, name)
    trainer, first = trainer_for(name, out_dir, tiny_gpt2())
    trainer.train()
    # The live weights: at ZeRO-3 gathered (a collective; rank 0 gets them, the others None, as in DeepSpeed).
    state = trainer.accelerator.get_state_dict(trainer.deepspeed) if CONFIGS[name]["stage"] == 3 \
        else trainer.model.state_dict()
    live = {k: v.detach().float().cpu().clone() for k, v in (state or {}).items()}
    trainer.save_model(os.path.join(out_dir, "final"))
    eval_loss = trainer.evaluate()["eval_loss"]
    reset_accelerate()

    resumed_trainer, resumed = trainer_for(name, out_dir, tiny_gpt2())
    resumed_trainer.train(resume_from_checkpoint=os.path.join(out_dir, "checkpoint-2"))
    reset_accelerate()

    result = {"config": name, "losses": first.losses, "resumed": resumed.losses, "eval_loss": eval_loss}
    if int(os.environ.get("RANK", "0")) == 0:
        # Loaded as a user loads the saved model for inference, on one process: without the Trainer's ZeRO-3
        # config alive, from_pretrained would build it under zero.Init, which is collective.
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config
        unset_hf_deepspeed_config()
        loaded = GPT2LMHeadModel.from_pretrained(os.path.join(out_dir, "final"))
        diffs = {k: (loaded.state_dict()[k].float() - v).abs().max().item() for k, v in live.items()}
        result["saved_max_diff"] = max(diffs.values())
        result["saved_keys"] = len(diffs)
        initial = tiny_gpt2().state_dict()
        result["moved"] = max((v - initial[k].float()).abs().max().item() for k, v in live.items())
    return result


def zero_init_broadcast():
    """What from_pretrained does at ZeRO-3: a module built under zero.Init, rank 0 writes its weights inside
    GatheredParameters(modifier_rank=0); every rank must then hold them. Returns the smallest weight sum over the
    ranks (the sum rank 0 wrote when every rank has it)."""
    import deepspeed
    import torch.distributed as dist
    deepspeed.init_distributed()
    with deepspeed.zero.Init(config_dict_or_path={"train_micro_batch_size_per_gpu": 1,
                                                  "zero_optimization": {"stage": 3}}):
        torch.manual_seed(dist.get_rank())  # different values on each rank unless broadcast
        module = torch.nn.Linear(4, 4)
    with deepspeed.zero.GatheredParameters(list(module.parameters()), modifier_rank=0):
        if dist.get_rank() == 0:
            with torch.no_grad():
                module.weight.copy_(torch.arange(16.0).view(4, 4))
    with deepspeed.zero.GatheredParameters(list(module.parameters())):
        total = torch.tensor([module.weight.detach().float().sum().item()])
    dist.all_reduce(total, op=dist.ReduceOp.MIN)
    return total.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("configs", nargs="+", choices=sorted(CONFIGS))
    args = parser.parse_args()
    import deepspeed
    broadcast_sum = zero_init_broadcast()
    for name in args.configs:
        result = run(name, args.root)
        result["deepspeed"] = deepspeed.__version__
        result["zero_init_broadcast_sum"] = broadcast_sum
        if int(os.environ.get("RANK", "0")) == 0:
            with open(args.out, "a") as f:
                f.write(json.dumps(result) + "\n")


def release_real_deepspeed_group():
    """Real DeepSpeed leaves torch.distributed's group to the interpreter's teardown, where Gloo's threads
    abort now and then (SIGABRT, "terminate called without an active exception", seen in CI on DeepSpeed's
    ranks). dsrt's exit hook collects and destroys it first (python/dsrt/comm.py); do the same for real
    DeepSpeed, so the peer's run fails only for what it computes. dsrt's run keeps relying on its own hook. On
    torch 2.x, torch.distributed.nn.functional imported after the group exists holds it in its default arguments
    past destroy_process_group: this script imports it first, before any group."""
    import deepspeed
    import torch.distributed as dist
    if hasattr(deepspeed, "__dsrt_version__"):
        return
    gc.collect()
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
    release_real_deepspeed_group()
