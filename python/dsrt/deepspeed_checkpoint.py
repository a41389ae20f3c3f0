"""Checkpoints written by DeepSpeed itself (torch.save pickles), converted into dsrt's format to load.

`engine.load_checkpoint(dir)` calls this when DIR/TAG holds DeepSpeed's files instead of dsrt's (see
docs/deepspeed_peer.md). DeepSpeed's layout (deepspeed/runtime/engine.py, zero/stage_1_and_2.py, stage3.py):
  stage 0    mp_rank_00_model_states.pt: 'module' (full weights), 'optimizer' (torch's state_dict)
  stage 1/2  the same file (optimizer None) + zero_pp_rank_<r>_mp_rank_00_optim_states.pt: per param group,
             rank r's slice of the group's flat fp32 buffer and of its Adam moments (params back to back)
  stage 3    zero_pp_rank_<r>_mp_rank_00_{model,optim}_states.pt: every parameter cut into world-size
             slices of ceil(numel / world) elements, rank r's slices back to back
From these, full per-parameter fp32 weights and Adam moments are rebuilt and written as a dsrt checkpoint
of the same world size (deepspeed_checkpoint_write.py), which the engine then loads (re-partitioning for its
own world size and stage).
Only Adam/AdamW moments are read (not SGD momentum). ZeRO-3 optimizer moments are not read: weights only.
"""

import importlib.abc
import importlib.util
import math
import sys
import types
from pathlib import Path

import torch

from dsrt.deepspeed_checkpoint_write import stage0_layout, write

# Keys of DeepSpeed's module file its load_checkpoint does not return as client_state (engine.py).
_DEEPSPEED_KEYS = {"module", "buffer_names", "optimizer", "lr_scheduler", "csr_tensor_module_names",
                   "skipped_steps", "global_steps", "dp_world_size", "mp_world_size", "data_sampler", "random_ltd"}


class _StubType(type):
    def __getattr__(cls, name):  # enum members pickle as getattr(ZeroStageEnum, 'gradients')
        if name.startswith("__"):
            raise AttributeError(name)
        return cls()


class _Stub(metaclass=_StubType):
    """Stands for the DeepSpeed objects its files pickle (LossScaler, ZeroStageEnum, fragment_address) when
    DeepSpeed is not installed: dsrt reads the files without it and needs none of those objects."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        self.args = args

    def __setstate__(self, state):
        self.state = state


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "deepspeed" or name.startswith("deepspeed."):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []


def _load(path):
    """torch.load of a DeepSpeed file. (A pickle_module= would be simpler, but Debian's torch 1.13 ignores it.)"""
    kwargs = {"weights_only": False} if "weights_only" in torch.load.__code__.co_varnames else {}
    if importlib.util.find_spec("deepspeed") is not None:
        return torch.load(path, map_location="cpu", **kwargs)
    finder = _StubFinder()
    sys.meta_path.insert(0, finder)
    try:
        return torch.load(path, map_location="cpu", **kwargs)
    finally:
        sys.meta_path.remove(finder)
        for name in [m for m in sys.modules if m == "deepspeed" or m.startswith("deepspeed.")]:
            del sys.modules[name]


def resolve(load_dir, tag):
    """DIR/TAG (tag from DIR/latest) when it holds DeepSpeed's files, else None (dsrt's own or nothing)."""
    if tag is None:
        latest = Path(load_dir) / "latest"
        if not latest.exists():
            return None
        tag = latest.read_text().strip()
    tdir = Path(load_dir) / str(tag)
    for name in ("mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt"):
        if (tdir / name).exists():
            with open(tdir / name, "rb") as f:
                return tdir if f.read(8) != b"DSRTCKPT" else None
    return None


def _unflatten(names, shapes, flat, per_rank=None, pads=None):
    """{name: tensor} from a flat buffer of params back to back, each followed by pads[i] elements of alignment
    padding (stage 1/2's param_alignment_paddings), or (per_rank) from stage 3's per-rank flat buffers."""
    out, offset = {}, 0
    for i, name in enumerate(names):
        numel = math.prod(shapes[name])
        if per_rank is None:
            out[name] = flat[offset:offset + numel].view(shapes[name])
            offset += numel + (pads[i] if pads else 0)
        else:
            part = math.ceil(numel / len(per_rank))
            out[name] = torch.cat([r[offset:offset + part] for r in per_rank])[:numel].view(shapes[name])
            offset += part
    return out


def _is_adam(state):
    """Adam's moments are what dsrt converts; Lion's lone exp_avg and Adagrad's sum are not read."""
    return "exp_avg" in state and "exp_avg_sq" in state


def read(tdir, optimizer_names):
    """DeepSpeed's checkpoint at TDIR as {'stage', 'world', 'params', 'moments', 'step', 'model', 'groups'}:
    fp32 weights and Adam moments by parameter name ('moments' None when not read). ``optimizer_names`` are
    the engine's parameter names in its optimizer's group order (stage 0's state_dict is indexed so)."""
    stage3 = (tdir / "zero_pp_rank_0_mp_rank_00_model_states.pt").exists()
    model = _load(tdir / ("zero_pp_rank_0_mp_rank_00_model_states.pt" if stage3 else "mp_rank_00_model_states.pt"))
    world = int(model.get("dp_world_size", 1))
    out = {"world": world, "model": model, "moments": None, "step": 0, "groups": None}
    if model.get("optimizer") is not None or not (tdir / "zero_pp_rank_0_mp_rank_00_optim_states.pt").exists():
        out["stage"] = 0
        out["params"] = {n: t.float() for n, t in model["module"].items()}
        opt = model.get("optimizer")
        if opt is not None and opt.get("state"):
            state = [opt["state"][i] for i in sorted(opt["state"])]
            if len(state) != len(optimizer_names) or not _is_adam(state[0]):
                return out  # not Adam over the same parameters (SGD, Lion, Adagrad, ...): weights only
            out["moments"] = {n: {"exp_avg": s["exp_avg"], "exp_avg_sq": s["exp_avg_sq"]}
                              for n, s in zip(optimizer_names, state)}
            out["step"], out["groups"] = int(state[0]["step"]), opt["param_groups"]
        return out
    optim = [_load(tdir / f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt")["optimizer_state_dict"]
             for r in range(world)]
    shapes = {n: tuple(s) for group in model["param_shapes"] for n, s in group.items()}
    names = list(shapes)
    out["stage"] = 3 if stage3 else 1
    if stage3:
        flats = [torch.cat(list(o["fp32_flat_groups"])) for o in optim]
        out["params"] = _unflatten(names, shapes, None, flats)
        return out
    out["params"], out["moments"] = {}, {n: {} for n in names}
    base = [o["base_optimizer_state"] for o in optim]
    adam = isinstance(base[0], dict) and _is_adam(base[0].get("state", {}).get(0, {}))
    for g, group in enumerate(model["param_shapes"]):
        gnames = list(group)
        pads = (optim[0].get("param_alignment_paddings") or [None] * (g + 1))[g]
        out["params"].update(_unflatten(gnames, shapes, torch.cat([o["single_partition_of_fp32_groups"][g]
                                                                   for o in optim]), pads=pads))
        for key in ("exp_avg", "exp_avg_sq") if adam else ():
            full = torch.cat([b["state"][g][key] for b in base])
            for n, t in _unflatten(gnames, shapes, full, pads=pads).items():
                out["moments"][n][key] = t
    if not adam:  # SGD, Lion, Adagrad, or DeepSpeed's elastic (list) layout: weights only
        out["moments"] = None
        return out
    out["step"], out["groups"] = int(base[0]["state"][0]["step"]), base[0]["param_groups"]
    return out


def client_state(ds):
    """What DeepSpeed's load_checkpoint returns as client_state: the module file's other keys."""
    return {k: v for k, v in ds["model"].items() if k not in _DEEPSPEED_KEYS}


def group_hyper_parameters(ds):
    """The param groups' lr, weight_decay, betas, eps as DeepSpeed's optimizer saved them (None if not read)."""
    keys = ("lr", "weight_decay", "betas", "eps")
    return [{k: list(g[k]) if k == "betas" else g[k] for k in keys if k in g} for g in ds["groups"] or []] or None


def load(engine, tdir, **options):
    """engine.load_checkpoint() of DeepSpeed's checkpoint TDIR: converted into a private temporary directory
    (every rank converts its own, so no shared scratch space is assumed) and loaded from there."""
    import tempfile

    from dsrt import _C
    from dsrt.checkpoint_state import encode_client_state
    from dsrt.engine import _GROUPS_KEY
    by_id = {id(p): n for n, p in engine.module.named_parameters()}
    names = [by_id[id(p)] for p in engine._params]
    ds = read(Path(tdir), [by_id[id(p)] for g in engine.optimizer.param_groups for p in g["params"]])
    if options["load_optimizer_states"] and not options["load_module_only"] and ds["moments"] is None:
        raise _C.DsrtError(f"{tdir}: dsrt reads the weights of a DeepSpeed ZeRO-3, non-Adam or optimizer-less "
                           "checkpoint but not its optimizer states, got 'load_optimizer_states=True'\n  hint: "
                           "load_checkpoint(load_optimizer_states=False) or load_module_only=True loads the weights")
    client = client_state(ds)
    if group_hyper_parameters(ds):
        client[_GROUPS_KEY] = group_hyper_parameters(ds)
    stage = engine.zero_optimization_stage()
    layout0 = stage0_layout(engine._params) if stage == 0 else None
    if stage == 0 and layout0 is None and options["load_optimizer_states"] and not options["load_module_only"]:
        raise _C.DsrtError(f"{tdir}: dsrt reads DeepSpeed's optimizer states into a stage-0 engine only for fp32 "
                           "models, got a 16-bit model\n  hint: load_checkpoint(load_optimizer_states=False) "
                           "or load_module_only=True loads the weights alone")
    with tempfile.TemporaryDirectory(prefix="dsrt-from-deepspeed-") as tmp:
        tag = write(ds, tmp, names, stage, encode_client_state(client), layout0)
        _, state = engine.load_checkpoint(tmp, tag, **options)
    return str(tdir), state
