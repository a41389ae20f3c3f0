"""Worker of test_gpu_checkpoint.py: trains steps [--first, --first + --steps) of gpu_support's MLP on
--device with dsrt (optionally loading a checkpoint first, saving one after) and prints `loss <step> <value>`.
A separate process per leg, so the CPU leg is a clean CPU world (Gloo) with CUDA hidden."""

import argparse

import torch

import dsrt as deepspeed
from gpu_support import batch, ds_config, loss_fn, make_model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", required=True)
    parser.add_argument("--stage", type=int, required=True)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--load", default=None)
    parser.add_argument("--save", default=None)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    # A leg that loads starts from another init: the checkpoint must overwrite every weight.
    model = make_model(seed=123 if args.load else 7).to(device)
    engine, _, _, _ = deepspeed.initialize(model=model, config=ds_config(args.stage))
    if args.load is not None:
        path, _ = engine.load_checkpoint(args.load)
        assert path is not None, f"no checkpoint found in {args.load}"
        assert engine.global_steps == args.first, f"loaded global_steps {engine.global_steps}, want {args.first}"
    for name, p in model.named_parameters():
        assert p.device.type == device.type, f"{name} is on {p.device}, want {device}"
    print(f"device {device.type} params on {next(model.parameters()).device}", flush=True)
    for step in range(args.first, args.first + args.steps):
        x, y = batch(step)
        loss = loss_fn(engine(x.to(device)), y.to(device))
        engine.backward(loss)
        engine.step()
        print(f"loss {step} {loss.item()!r}", flush=True)
    if args.save is not None:
        engine.save_checkpoint(args.save)


if __name__ == "__main__":
    main()
