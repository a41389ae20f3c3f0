"""One rank of a plain Accelerate training loop with a DeepSpeed plugin (what `accelerate launch --use_deepspeed`
runs): tiny GPT-2 from a config, synthetic tokens, gradient accumulation 2 through accelerator.accumulate().
Rank 0 appends one JSON line with the per-step mean losses to --out, and saves the unwrapped model with
accelerator.get_state_dict() (ZeRO-3: the gathered 16-bit state dict) to compare with the live weights.
"""

import argparse
import json
import os

import torch

from hf_trainer_run import Tokens, release_real_deepspeed_group, tiny_gpt2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--save", required=True, help="where rank 0 torch.saves get_state_dict()'s weights")
    args = parser.parse_args()
    from accelerate import Accelerator, PartialState
    from accelerate.utils import set_seed

    set_seed(0)
    if not torch.cuda.is_available():
        # Accelerate picks no process-group backend for DeepSpeed without an accelerator (it would run every
        # rank as a world of one, for DeepSpeed itself too); Gloo first, as TrainingArguments(use_cpu=True) does.
        PartialState(cpu=True)
    accelerator = Accelerator()  # the plugin comes from `accelerate launch` (ACCELERATE_DEEPSPEED_* variables)
    model = tiny_gpt2()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    loader = torch.utils.data.DataLoader(Tokens(32, 16, 64, 1), batch_size=2, shuffle=False)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    losses, window = [], []
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            window.append(loss.detach())
        if accelerator.sync_gradients:
            losses.append(accelerator.gather(torch.stack(window).mean()).mean().item())
            window = []
    state = accelerator.get_state_dict(model)
    if accelerator.is_main_process:
        live = {k: v.float() for k, v in state.items()}
        fresh = tiny_gpt2()
        missing = [k for k in fresh.state_dict() if k not in live and not k.endswith("attn.bias")]
        moved = max((live[k] - v.float()).abs().max().item() for k, v in fresh.state_dict().items() if k in live)
        torch.save(live, args.save)
        import deepspeed
        with open(args.out, "a") as f:
            f.write(json.dumps({"config": os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE", "?"), "losses": losses,
                                "global_steps": model.global_steps, "state_keys": len(live), "missing": missing, "moved": moved,
                                "deepspeed": deepspeed.__version__}) + "\n")
    accelerator.end_training()


if __name__ == "__main__":
    main()
    release_real_deepspeed_group()
