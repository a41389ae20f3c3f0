"""Checkpoints written by DeepSpeed itself (torch.save pickles), converted into dsrt's format to load.

`engine.load_checkpoint(dir)` calls this when DIR/TAG holds DeepSpeed's files instead of dsrt's (see
docs/deepspeed_peer.md). DeepSpeed's layout (deepspeed/runtime/engine.py, zero/stage_1_and_2.py, stage3.py):
  stage 0    mp_rank_00_model_states.pt: 'module' (full weights), 'optimizer' (torch's state_dict)
  stage 1/2  the same file (optimizer None) + zero_pp_rank_<r>_mp_rank_00_optim_states.pt: per param group,
             rank r's slice of the group's flat fp32 buffer and of its Adam moments (params back to back)
  stage 3    zero_pp_rank_<r>_mp_rank_00_{model,optim}_states.pt: every parameter cut into world-size
             slices of ceil(numel / world) elements, rank r's slices back to back
From these, full per-parameter fp32 weights and Adam moments are rebuilt and written as a dsrt checkpoint
of the same world size, which the engine then loads (re-partitioning for its own world size and stage).
Only Adam/AdamW moments are read (not SGD momentum). ZeRO-3 optimizer moments are not read: weights only.
"""

import importlib.abc
import importlib.util
import json
import math
import sys
import types
import zlib
from pathlib import Path

import numpy as np
import torch

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


def _unflatten(names, shapes, flat, per_rank=None):
    """{name: tensor} from a flat buffer of params back to back (per_rank: stage 3's [rank][flat])."""
    out, offset = {}, 0
    for name in names:
        numel = math.prod(shapes[name])
        if per_rank is None:
            out[name] = flat[offset:offset + numel].view(shapes[name])
            offset += numel
        else:
            part = math.ceil(numel / len(per_rank))
            out[name] = torch.cat([r[offset:offset + part] for r in per_rank])[:numel].view(shapes[name])
            offset += part
    return out


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
    for g, group in enumerate(model["param_shapes"]):
        gnames = list(group)
        out["params"].update(_unflatten(gnames, shapes, torch.cat([o["single_partition_of_fp32_groups"][g]
                                                                   for o in optim])))
        for key in ("exp_avg", "exp_avg_sq"):
            full = torch.cat([b["state"][g][key] for b in base])
            for n, t in _unflatten(gnames, shapes, full).items():
                out["moments"][n][key] = t
    out["step"], out["groups"] = int(base[0]["state"][0]["step"]), base[0]["param_groups"]
    return out


def _write_file(path, meta, tensors):
    """dsrt's checkpoint file (runtime/checkpoint/checkpoint_file.h): magic, version 1, JSON header, raw
    tensor bytes covered by a CRC-32 (zlib's, the same polynomial)."""
    blobs = [(n, np.ascontiguousarray(t.detach().float().cpu().numpy())) for n, t in tensors]
    table, offset, crc = [], 0, 0
    for name, a in blobs:
        table.append({"name": name, "dtype": "float32", "shape": list(a.shape), "offset": offset, "nbytes": a.nbytes})
        offset += a.nbytes
        crc = zlib.crc32(a.tobytes(), crc)
    header = json.dumps({"meta": meta, "tensors": table, "payload_bytes": offset, "payload_crc32": crc}).encode()
    with open(path, "wb") as f:
        f.write(b"DSRTCKPT" + (1).to_bytes(4, "little") + len(header).to_bytes(8, "little") + header)
        for _, a in blobs:
            f.write(a.tobytes())


def stage0_layout(params):
    """Stage 0 (runtime/ddp): the parameters are views of one flat fp32 buffer in gradient-bucket order
    (reverse registration order, bucket by bucket), and the optimizer state has the same layout. Returns each
    parameter's offset in it and its size, or None when the parameters are not such views (16-bit models)."""
    stores = [p.untyped_storage() if hasattr(p, "untyped_storage") else p.storage() for p in params]
    if len({s.data_ptr() for s in stores}) != 1 or any(p.dtype != torch.float32 for p in params):
        return None
    return [p.storage_offset() for p in params], stores[0].nbytes() // 4


def write(ds, out_dir, names, stage, client_state_json, layout0=None):
    """Writes what read() returned as dsrt checkpoint OUT_DIR/converted (ZeRO STAGE, DeepSpeed's world size);
    ``names`` are the engine's parameter names (the ZeRO flat order), ``layout0`` stage0_layout(). Returns
    the tag."""
    missing = [n for n in names if n not in ds["params"]]
    if missing:
        raise RuntimeError(f"DeepSpeed checkpoint has no weights for {missing} (it holds {sorted(ds['params'])})")
    model, world, tag = ds["model"], ds["world"], "converted"
    steps = int(model.get("global_steps", 0))
    sched = model.get("lr_scheduler") or {}
    engine = {"global_steps": steps, "global_samples": int(model.get("global_samples", 0)),
              "last_batch_iteration": int(sched.get("last_batch_iteration", steps - 1)),
              "train_batch_size": int((model.get("ds_config") or {}).get("train_batch_size", 0)),
              "dp_world_size": world, "zero_stage": stage, "skipped_steps": int(model.get("skipped_steps", 0))}
    moments = ds["moments"] or {n: {"exp_avg": torch.zeros_like(ds["params"][n]),
                                    "exp_avg_sq": torch.zeros_like(ds["params"][n])} for n in names}
    numels = [ds["params"][n].numel() for n in names]
    meta = {"kind": "dsrt_model_states", "zero_stage": stage, "world_size": world, "param_names": list(names),
            "engine": engine, "client_state": json.loads(client_state_json)}
    tensors = [("module." + n, ds["params"][n]) for n in names]
    flat = {k: torch.cat([moments[n][k].reshape(-1).float() for n in names]) for k in ("exp_avg", "exp_avg_sq")}
    flat["fp32"] = torch.cat([ds["params"][n].reshape(-1) for n in names])
    tdir = Path(out_dir) / tag
    tdir.mkdir(parents=True, exist_ok=True)
    if stage == 0:
        offsets, total = layout0
        for k in ("exp_avg", "exp_avg_sq"):
            flat[k] = torch.zeros(total)
            for n, off in zip(names, offsets):
                flat[k][off:off + moments[n][k].numel()] = moments[n][k].reshape(-1).float()
        meta["optimizer"] = {"step": ds["step"], "state_names": ["exp_avg", "exp_avg_sq"]}
        tensors += [("optimizer." + k, flat[k]) for k in ("exp_avg", "exp_avg_sq")]
    else:
        # runtime/zero/partition_plan.h: back to back, padded to a multiple of world * alignment, cut evenly.
        align = 2
        padded = math.ceil(sum(numels) / (world * align)) * world * align
        part = padded // world
        plan = {"param_numels": numels, "alignment": align, "world_size": world, "partition_numel": part}
        meta["partition"] = plan
        flat = {k: torch.cat([v, v.new_zeros(padded - v.numel())]) for k, v in flat.items()}
        for r in range(world):
            cut = slice(r * part, (r + 1) * part)
            _write_file(tdir / f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt",
                        {"kind": "dsrt_optim_states", "rank": r, "zero_stage": stage, "partition": plan,
                         "step": ds["step"], "state_names": ["exp_avg", "exp_avg_sq"]},
                        [("fp32_flat_partition", flat["fp32"][cut]), ("optimizer.exp_avg", flat["exp_avg"][cut]),
                         ("optimizer.exp_avg_sq", flat["exp_avg_sq"][cut])])
    _write_file(tdir / "mp_rank_00_model_states.pt", meta, tensors)
    (Path(out_dir) / "latest").write_text(tag)
    return tag


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
        raise _C.DsrtError(f"{tdir}: dsrt reads the weights of a DeepSpeed ZeRO-3 (or optimizer-less) checkpoint "
                           "but not its optimizer states, got 'load_optimizer_states=True'\n  hint: "
                           "load_checkpoint(load_optimizer_states=False) or load_module_only=True loads the weights")
    client = client_state(ds)
    if group_hyper_parameters(ds):
        client[_GROUPS_KEY] = group_hyper_parameters(ds)
    stage = engine.zero_optimization_stage()
    layout0 = stage0_layout(engine._params) if stage == 0 else None
    if stage == 0 and layout0 is None and options["load_optimizer_states"] and not options["load_module_only"]:
        raise _C.DsrtError(f"{tdir}: dsrt reads DeepSpeed's optimizer states into a stage-0 engine only for fp32 "
                           "models, got a 16-bit model\n  hint: load_checkpoint(load_optimizer_states=False) "
                           "loads the weights")
    with tempfile.TemporaryDirectory(prefix="dsrt-from-deepspeed-") as tmp:
        tag = write(ds, tmp, names, stage, encode_client_state(client), layout0 or ([0] * len(names), 0))
        _, state = engine.load_checkpoint(tmp, tag, **options)
    return str(tdir), state
