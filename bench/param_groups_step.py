"""The cost of param groups in the optimizer step: one process (a world of one), dsrt's engine at stage 0 and
stage 2 (+ offload) on 4 x (Linear(H) + LayerNorm(H)), trained with
  one   : model.parameters() (one group, one run of the flat partition),
  hf    : Hugging Face's grouping (weights decay, biases and LayerNorm weights do not: 16 alternating runs),
  each  : every parameter its own group (the most runs a model of this shape can have),
interleaved round by round; prints the median ms of engine.step() (the optimizer step) and of a whole training
step per layout, and each layout's ratio to `one`. Run with the interpreter dsrt was built for:
  PYTHONPATH=build/python OMP_NUM_THREADS=1 /usr/bin/python3 bench/param_groups_step.py [rounds=5] [steps=10] [H=2048]
"""

import statistics
import sys
import time

import torch

import dsrt as deepspeed

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
HIDDEN = int(sys.argv[3]) if len(sys.argv) > 3 else 2048
LAYOUTS = ("one", "hf", "each")
STAGES = {"stage0": {"stage": 0}, "stage2": {"stage": 2},
          "stage2_offload": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}


def model_of():
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.LayerNorm(HIDDEN)]
    return torch.nn.Sequential(*layers)


def groups(model, layout):
    named = list(model.named_parameters())
    if layout == "one":
        return model.parameters()
    if layout == "each":
        return [{"params": [p], "weight_decay": 0.01} for _, p in named]
    decay = [p for n, p in named if n.endswith("weight") and p.dim() > 1]
    rest = [p for n, p in named if not (n.endswith("weight") and p.dim() > 1)]
    return [{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}]


def measure(stage, layout):
    model = model_of()
    cfg = {"train_batch_size": 16, "zero_optimization": STAGES[stage],
           "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.01}}}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=groups(model, layout), config=cfg)
    x = torch.randn(16, HIDDEN)
    steps, wholes = [], []
    for i in range(STEPS + 2):
        t0 = time.perf_counter()
        engine.backward(engine(x).pow(2).mean())
        t1 = time.perf_counter()
        engine.step()
        t2 = time.perf_counter()
        if i >= 2:  # the first steps allocate the optimizer state
            steps.append(t2 - t1)
            wholes.append(t2 - t0)
    return statistics.median(steps) * 1e3, statistics.median(wholes) * 1e3


def main():
    results = {(s, lay): ([], []) for s in STAGES for lay in LAYOUTS}
    for _ in range(ROUNDS):
        for stage in STAGES:
            for layout in LAYOUTS:
                step, whole = measure(stage, layout)
                results[(stage, layout)][0].append(step)
                results[(stage, layout)][1].append(whole)
    print(f"hidden {HIDDEN}, {ROUNDS} rounds x {STEPS} steps, medians; ratio to one group")
    print(f"{'stage':<16}{'layout':<8}{'step ms':>10}{'ratio':>8}{'train step ms':>16}{'ratio':>8}")
    for stage in STAGES:
        base_step = statistics.median(results[(stage, "one")][0])
        base_whole = statistics.median(results[(stage, "one")][1])
        for layout in LAYOUTS:
            step = statistics.median(results[(stage, layout)][0])
            whole = statistics.median(results[(stage, layout)][1])
            print(f"{stage:<16}{layout:<8}{step:>10.2f}{step / base_step:>8.2f}{whole:>16.2f}{whole / base_whole:>8.2f}")


if __name__ == "__main__":
    main()
