"""The cases of bench/gpu_step_time.py, each run in its own process by ``run_case(name, ...)``: the same GPT,
the same random tokens, AdamW (lr 1e-4, weight decay 0.01) in every one; only the training stack differs.

torch_fp32, torch_amp_bf16   plain torch, fused AdamW on CUDA (the reference every ratio is taken against)
fsdp2_bf16                   torch.distributed.fsdp.fully_shard per block + root, bf16 params, fp32 reduce
ds_z<S>_<dtype>[_off...]     real DeepSpeed; optimizer torch.optim.AdamW (torch_adam) so that no op is JIT-
                             built in the timed process (FusedAdam/CPUAdam compile for a minute or more)
dsrt_z<S>_<dtype>[_off...]   dsrt (import dsrt as deepspeed), its own Adam (device or CPU)
Offload suffixes: _offopt = offload_optimizer (stage 2), _offboth = offload_optimizer + offload_param (stage 3).
floor_copy_<dtype>           the copies an offloaded step cannot avoid, alone: the model's gradients device ->
                             pinned fp32 host memory, the updated <dtype> parameters pinned host -> device
floor_cpu_adam               dsrt's CPU Adam over the model's parameter count alone (a CPU engine, stage 0 fp32,
                             engine.step() timed): with the copies, the floor max(copy, CPU Adam) an offloaded
                             step approaches when they overlap (gpu_step_time.py prints it per offload case)
"""

import os
import statistics
import tempfile
import time

import torch

import gpu_model

LR, WD = 1e-4, 0.01
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def case_names(dsrt=True, deepspeed=True):
    """Every case, most important first: a run out of budget drops the tail."""
    layouts = [(s, "") for s in range(4)] + [(2, "_offopt"), (3, "_offboth")]
    names = ["torch_amp_bf16", "torch_fp32", "fsdp2_bf16"]
    names += [f"dsrt_z{s}_bf16" for s in range(4)] if dsrt else []
    # bf16 offload and its floor early: the overlap of the offload pipeline is what the next GPU run measures.
    names += [f"dsrt_z{s}_bf16{o}" for s, o in layouts if o] + ["floor_copy_bf16", "floor_cpu_adam"] if dsrt else []
    names += [f"ds_z{s}_bf16" for s in range(4)] if deepspeed else []
    for dtype in ("fp32", "fp16"):
        names += [f"dsrt_z{s}_{dtype}" for s in range(4)] if dsrt else []
    for dtype in ("fp32", "fp16"):
        names += [f"dsrt_z{s}_{dtype}{o}" for s, o in layouts if o] + [f"floor_copy_{dtype}"] if dsrt else []
    names += [f"ds_z{s}_bf16{o}" for s, o in layouts if o] if deepspeed else []
    return names


def parse(name):
    """'dsrt_z3_bf16_offboth' -> ('dsrt', 3, 'bf16', 'offboth')."""
    stack, stage, dtype, *rest = name.split("_")
    return stack, int(stage[1:]), dtype, rest[0] if rest else None


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _adamw(params, device):
    """Fused AdamW on CUDA (the fastest torch has), torch's default implementation elsewhere."""
    if device.type == "cuda":
        return torch.optim.AdamW(params, lr=LR, weight_decay=WD, fused=True), "AdamW(fused)"
    return torch.optim.AdamW(params, lr=LR, weight_decay=WD), "AdamW"


def _time(step, device, warmup, steps):
    """Runs warmup + steps steps of ``step() -> loss``; per-step milliseconds of the measured ones, losses."""
    times, losses = [], []
    for i in range(warmup + steps):
        _sync(device)
        t0 = time.perf_counter()
        loss = step()
        _sync(device)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
        losses.append(float(loss))
    return times, losses


def _ds_config(stage, dtype, offload, batch, torch_adam):
    zero = {"stage": stage}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if offload == "offboth":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    params = {"lr": LR, "weight_decay": WD}
    if torch_adam:
        params["torch_adam"] = True
    cfg = {"train_batch_size": batch, "train_micro_batch_size_per_gpu": batch, "zero_optimization": zero,
           "optimizer": {"type": "AdamW", "params": params}, "steps_per_print": 1 << 30}
    if dtype == "bf16":
        cfg["bf16"] = {"enabled": True}
    elif dtype == "fp16":
        cfg["fp16"] = {"enabled": True, "initial_scale_power": 12}
    return cfg


def _engine_case(module, name, model, batch_shape, device, warmup, steps):
    """dsrt or DeepSpeed: initialize from the config, then forward / backward / step."""
    stack, stage, dtype, offload = parse(name)
    model = model.to(device)
    cfg = _ds_config(stage, dtype, offload, batch_shape[0], torch_adam=(stack == "ds"))
    engine, _, _, _ = module.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    idx, targets = _tokens(batch_shape, device)

    def step():
        loss = engine(idx, targets)
        engine.backward(loss)
        engine.step()
        return loss.item()

    times, losses = _time(step, device, warmup, steps)
    optimizer = "torch.optim.AdamW (torch_adam)" if stack == "ds" else "dsrt Adam"
    return times, losses, {"optimizer": optimizer, "skipped_steps": int(getattr(engine, "skipped_steps", 0))}


def _tokens(batch_shape, device):
    batch, seq, vocab = batch_shape
    gen = torch.Generator().manual_seed(1)
    idx = torch.randint(vocab, (batch, seq), generator=gen)
    return idx.to(device), torch.roll(idx, -1, 1).to(device)


def _torch_case(name, model, batch_shape, device, warmup, steps):
    model = model.to(device)
    opt, optimizer = _adamw(model.parameters(), device)
    idx, targets = _tokens(batch_shape, device)
    amp = name == "torch_amp_bf16"

    def step():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    times, losses = _time(step, device, warmup, steps)
    return times, losses, {"optimizer": optimizer}


def _fsdp2_case(name, model, batch_shape, device, warmup, steps):
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # torch >= 2.6
    store = tempfile.NamedTemporaryFile(prefix="fsdp2_store_", delete=False).name
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method=f"file://{store}",
                            rank=0, world_size=1)
    try:
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        model = model.to(device)
        for block in model.blocks:
            fully_shard(block, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
        try:
            opt, optimizer = _adamw(model.parameters(), device)
        except (RuntimeError, TypeError):  # a torch whose fused AdamW refuses DTensors
            opt, optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD), "AdamW(foreach)"
        idx, targets = _tokens(batch_shape, device)

        def step():
            loss = model(idx, targets)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss.item()

        times, losses = _time(step, device, warmup, steps)
        return times, losses, {"optimizer": optimizer}
    finally:
        dist.destroy_process_group()
        os.unlink(store)


def _floor_copy_case(name, model, device, warmup, steps):
    """The offload copies of one step without the step: n gradients to pinned fp32, n parameters back."""
    n = gpu_model.parameter_count(model)
    dtype = DTYPES[name.split("_")[2]]
    pin = device.type == "cuda"
    grad = torch.randn(n, device=device).to(dtype)
    host_grad = torch.empty(n, dtype=torch.float32, pin_memory=pin)
    host_params = torch.empty(n, dtype=dtype, pin_memory=pin)
    params = torch.empty(n, dtype=dtype, device=device)
    d2h, h2d = [], []
    for i in range(warmup + steps):
        _sync(device)
        t0 = time.perf_counter()
        host_grad.copy_(grad, non_blocking=True)
        _sync(device)
        t1 = time.perf_counter()
        params.copy_(host_params, non_blocking=True)
        _sync(device)
        t2 = time.perf_counter()
        if i >= warmup:
            d2h.append((t1 - t0) * 1e3)
            h2d.append((t2 - t1) * 1e3)
    times = [a + b for a, b in zip(d2h, h2d)]
    return times, [0.0], {"d2h_ms": round(statistics.median(d2h), 2), "h2d_ms": round(statistics.median(h2d), 2),
                          "numel": n}


def _floor_cpu_adam_case(model, warmup, steps):
    """dsrt's CPU Adam over as many elements as the model has: one flat fp32 parameter on the CPU, stage 0."""
    import dsrt
    n = gpu_model.parameter_count(model)
    flat = torch.nn.Module()
    flat.weight = torch.nn.Parameter(torch.zeros(n))
    cfg = {"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0},
           "optimizer": {"type": "AdamW", "params": {"lr": LR, "weight_decay": WD}}, "steps_per_print": 1 << 30}
    engine, _, _, _ = dsrt.initialize(model=flat, model_parameters=flat.parameters(), config=cfg)
    times = []
    for i in range(warmup + steps):
        loss = (flat.weight * 1e-3).sum()
        engine.backward(loss)
        t0 = time.perf_counter()
        engine.step()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return times, [0.0], {"optimizer": "dsrt Adam (CPU)", "numel": n}


def run_case(name, size, device, warmup, steps):
    """One case in this process; returns its result dict (the JSON line gpu_step_time.py prints)."""
    device = torch.device(device)
    if device.type == "cuda":
        if device.index is None:  # "cuda" alone: set_device needs an index
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = False  # as PLATFORM §8's torch timings: fp32 is fp32
        torch.backends.cudnn.allow_tf32 = False
        torch.cuda.reset_peak_memory_stats(device)
    model, batch_shape = gpu_model.build(size)
    result = {"case": name, "size": size, "params_m": round(gpu_model.parameter_count(model) / 1e6, 1),
              "batch": batch_shape[0], "seq": batch_shape[1], "device": str(device), "torch": torch.__version__}
    if name == "floor_cpu_adam":
        times, losses, extra = _floor_cpu_adam_case(model, warmup, steps)
    elif name.startswith("floor_copy_"):
        times, losses, extra = _floor_copy_case(name, model, device, warmup, steps)
    elif name.startswith("torch_"):
        times, losses, extra = _torch_case(name, model, batch_shape, device, warmup, steps)
    elif name.startswith("fsdp2_"):
        times, losses, extra = _fsdp2_case(name, model, batch_shape, device, warmup, steps)
    elif name.startswith("dsrt_"):
        import dsrt
        times, losses, extra = _engine_case(dsrt, name, model, batch_shape, device, warmup, steps)
    else:
        import deepspeed
        times, losses, extra = _engine_case(deepspeed, name, model, batch_shape, device, warmup, steps)
    result.update(extra)
    result.update(ok=True, step_ms=round(statistics.median(times), 2), step_ms_min=round(min(times), 2),
                  steps=len(times), loss_first=round(losses[0], 4), loss_last=round(losses[-1], 4))
    if device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name(device)
        result["peak_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 3)
    else:
        import resource
        result["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
    return result
