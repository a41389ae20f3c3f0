"""deepspeed.utils' safe_get_full_* / safe_set_full_* / safe_*_local_* for dsrt's engine.

DeepSpeed reads a parameter's fp32 master, gradient or optimizer state through the "fragment" each rank's
optimizer holds of it (deepspeed/utils/tensor_fragment.py); dsrt's C++ strategies expose the same thing
(runtime/param_fragment.h, dsrt._C.Engine.param_fragment): views of the live flat tensors. A full value is
each rank's fragment placed at its offset and summed over ranks, so the full getters at ZeRO stages 1-3 are
collective (every rank calls them, for the same parameters in the same order), as DeepSpeed's.

Where DeepSpeed returns None, so do these: a parameter no engine trains (frozen, or no engine), and the
fp32 master / optimizer state at stage 0 (DeepSpeed 0.19's plain optimizer and FP16_Optimizer, also used
for bf16 there, keep no per-parameter mapping); the setters then do nothing, as DeepSpeed's.
"""

import weakref

import torch
import torch.distributed as dist

# id(parameter) -> (weakref to its engine, index among the engine's trained parameters).
_owners = {}

_LOCAL_ONLY = "This API is only defined for ZeRO-3 partitioned parameters"


def register_engine(engine, params):
    ref = weakref.ref(engine)
    for i, p in enumerate(params):
        _owners[id(p)] = (ref, i)


def unregister_engine(params):
    for p in params:
        _owners.pop(id(p), None)


def _owner(param):
    """(engine, index) of the engine training ``param``, or (None, None)."""
    entry = _owners.get(id(param))
    if entry is None:
        return None, None
    engine = entry[0]()
    if engine is None or engine._inference_only or entry[1] >= len(engine._params) \
            or engine._params[entry[1]] is not param:
        return None, None
    return engine, entry[1]


def _has_hp_mapping(engine):
    # DeepSpeed 0.19 links fp32 fragments to the parameters in its ZeRO optimizers only: at stage 0 fp32 runs
    # the plain optimizer and fp16/bf16 run FP16_Optimizer (bf16 as DDP_BFLOAT16), none of which has them.
    return engine._engine.zero_stage > 0


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _gather(engine, fragment, run):
    """The full fp32 value: zeros with this rank's run at its offset, summed over ranks where partitioned."""
    shape = fragment["shape"]
    if not fragment["partitioned"]:
        return run.to(engine.device, torch.float32, copy=True).view(shape)
    full = torch.zeros(_numel(shape), dtype=torch.float32, device=engine.device)
    offset, numel = fragment["param_offset"], fragment["numel"]
    if numel:
        full.narrow(0, offset, numel).copy_(run)
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(full)
    return full.view(shape)


def _piece(fragment, value):
    """This rank's run of a full ``value`` (any shape with the parameter's numel)."""
    flat = value.detach().reshape(-1)
    numel = _numel(fragment["shape"])
    if flat.numel() != numel:
        raise AssertionError(f" Number of elements do not match: {flat.numel()} != {numel}")
    return flat.narrow(0, fragment["param_offset"], fragment["numel"])


def _state(fragment, key):
    state = fragment["state"]
    if key not in state:
        raise ValueError(f"{key} not found in optimizer state fragment (this optimizer keeps: "
                         f"{', '.join(sorted(state)) or 'no state'})")
    return state[key]


def _write_model(engine, param, fragment, value):
    """After a master write: the model's copy takes the same values, so forward sees them before the next
    step. Stages 0-2 hold the parameter whole on every rank; stage 3 holds its partition run (and the full
    data of a persistent parameter)."""
    with torch.no_grad():
        if fragment["partitioned"] and engine._engine.zero_stage == 3:
            if fragment["numel"]:
                fragment["model"].copy_(_piece(fragment, value))
            if param.numel() != _numel(fragment["shape"]):
                return
        param.data.copy_(value.detach().reshape(param.shape))


# ---- full values --------------------------------------------------------------------------------------

def safe_get_full_fp32_param(param):
    """The fp32 master of ``param``, full and shaped like it, on the model's device. Collective at ZeRO."""
    engine, index = _owner(param)
    if engine is None or not _has_hp_mapping(engine):
        return None
    fragment = engine._engine.param_fragment(index)
    return _gather(engine, fragment, fragment["fp32"])


def safe_set_full_fp32_param(param, value):
    """Sets ``param``'s fp32 master (this rank's part of ``value``) and the model's copy. Every rank passes
    the same full value."""
    engine, index = _owner(param)
    if engine is None or not _has_hp_mapping(engine):
        return
    fragment = engine._engine.param_fragment(index)
    with torch.no_grad():
        fragment["fp32"].copy_(_piece(fragment, value))
    _write_model(engine, param, fragment, value)


def safe_get_full_optimizer_state(param, optim_state_key):
    """The optimizer's ``optim_state_key`` state (e.g. "exp_avg") of ``param``, full, fp32. Collective at ZeRO."""
    engine, index = _owner(param)
    if engine is None or not _has_hp_mapping(engine):
        return None
    fragment = engine._engine.param_fragment(index)
    return _gather(engine, fragment, _state(fragment, optim_state_key))


def safe_set_full_optimizer_state(param, value, optim_state_key):
    """Sets this rank's part of ``param``'s ``optim_state_key`` state from the full ``value``."""
    engine, index = _owner(param)
    if engine is None or not _has_hp_mapping(engine):
        return
    fragment = engine._engine.param_fragment(index)
    with torch.no_grad():
        _state(fragment, optim_state_key).copy_(_piece(fragment, value))


def safe_get_full_grad(param):
    """``param``'s gradient, full. As DeepSpeed's: the accumulated .grad where it is not reduced yet (stage
    0, or stage 1 inside the window) or None after the step at stage 0 (bf16 there: the accumulation the
    step uses, in bf16); once reduced (ZeRO 1 at the boundary, ZeRO 2/3 after any backward) the averaged fp32
    gradient, gathered (collective). ZeRO 1/2 between step() and the next backward: ValueError."""
    engine, index = _owner(param)
    if engine is None:
        return param.grad
    stage, state = engine._engine.zero_stage, engine._engine.gradient_state
    if stage == 0 or (stage == 1 and state == "local"):
        if state == "none":
            return None
        if stage == 0 and engine._engine.bf16_enabled:
            # dsrt accumulates bf16 gradients in fp32 (its .grad is emptied into that every micro-step);
            # DeepSpeed's FP16_Optimizer-for-bf16 hands out the bf16 .grad: the same values in its dtype.
            fragment = engine._engine.param_fragment(index)
            return fragment["grad"].view(fragment["shape"]).to(param.dtype)
        return param.grad
    fragment = engine._engine.param_fragment(index)
    if state == "none" and stage < 3:
        raise ValueError("Gradients are only available immediately after backward and before engine step")
    return _gather(engine, fragment, fragment["grad"])


def safe_set_full_grad(param, value):
    """Sets the gradient safe_get_full_grad reads (this rank's part where partitioned)."""
    engine, index = _owner(param)
    if engine is None:
        if param.grad is not None:
            param.grad.copy_(value)
        return
    stage, state = engine._engine.zero_stage, engine._engine.gradient_state
    fragment = engine._engine.param_fragment(index)
    with torch.no_grad():
        if stage == 0 and engine._engine.bf16_enabled:
            fragment["grad"].copy_(value.detach().reshape(-1))
        elif (stage == 0 or (stage == 1 and state == "local")) and param.grad is not None:
            param.grad.copy_(value)
        elif stage > 0:
            fragment["grad"].copy_(_piece(fragment, value))


# ---- this rank's partition (ZeRO-3) ---------------------------------------------------------------------

def _local(param):
    engine, index = _owner(param)
    if engine is None or engine._engine.zero_stage != 3:
        raise AssertionError(_LOCAL_ONLY)
    return engine, engine._engine.param_fragment(index)


def _check_local(fragment, value):
    flat = value.detach().reshape(-1)
    if flat.numel() != fragment["numel"]:
        raise AssertionError(f" Number of elements do not match: {flat.numel()} != {fragment['numel']}")
    return flat


def safe_get_local_fp32_param(param):
    """This rank's run of ``param``'s fp32 master, 1-D (dsrt's ZeRO-3 partitions the flat model, so a run
    may be all of the parameter, part of it or empty; DeepSpeed splits every parameter over all ranks)."""
    engine, fragment = _local(param)
    return fragment["fp32"].to(engine.device, torch.float32, copy=True)


def safe_set_local_fp32_param(param, value):
    """Sets this rank's run of ``param``'s fp32 master and of the parameter partition gathers read."""
    _, fragment = _local(param)
    flat = _check_local(fragment, value)
    with torch.no_grad():
        fragment["fp32"].copy_(flat)
        fragment["model"].copy_(flat)


def safe_get_local_optimizer_state(param, optim_state_key):
    engine, fragment = _local(param)
    return _state(fragment, optim_state_key).to(engine.device, torch.float32, copy=True)


def safe_set_local_optimizer_state(param, value, optim_state_key):
    _, fragment = _local(param)
    flat = _check_local(fragment, value)
    with torch.no_grad():
        _state(fragment, optim_state_key).copy_(flat)


def safe_get_local_grad(param):
    """This rank's run of ``param``'s averaged gradient partition, fp32, 1-D."""
    engine, fragment = _local(param)
    return fragment["grad"].to(engine.device, torch.float32, copy=True)


def safe_set_local_grad(param, value):
    _, fragment = _local(param)
    flat = _check_local(fragment, value)
    with torch.no_grad():
        fragment["grad"].copy_(flat)
