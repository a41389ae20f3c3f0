"""dsrt checkpoint files written from Python, for checkpoints converted from DeepSpeed's (deepspeed_checkpoint.py).

The format is runtime/checkpoint/checkpoint_file.h and checkpoint_states.cc (the C++ engine reads it): rank 0's
`mp_rank_00_model_states.pt` with the full weights by name, the engine counters and the client state, and at
ZeRO stages one `zero_pp_rank_<r>_mp_rank_00_optim_states.pt` per rank with its slice of the flat fp32 buffer and
of the Adam moments, cut as runtime/zero/partition_plan.h cuts it. Only fp32 tensors are written.
"""

import json
import math
import zlib
from pathlib import Path

import numpy as np
import torch

_MOMENTS = ("exp_avg", "exp_avg_sq")


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
    # Without DeepSpeed's moments (a weights-only load) zeros stand in; the engine does not load them.
    moments = ds["moments"] or {n: {k: torch.zeros_like(ds["params"][n]) for k in _MOMENTS} for n in names}
    numels = [ds["params"][n].numel() for n in names]
    meta = {"kind": "dsrt_model_states", "zero_stage": stage, "world_size": world, "param_names": list(names),
            "engine": engine, "client_state": json.loads(client_state_json)}
    tensors = [("module." + n, ds["params"][n]) for n in names]
    flat = {k: torch.cat([moments[n][k].reshape(-1).float() for n in names]) for k in _MOMENTS}
    flat["fp32"] = torch.cat([ds["params"][n].reshape(-1) for n in names])
    tdir = Path(out_dir) / tag
    tdir.mkdir(parents=True, exist_ok=True)
    if stage == 0:
        # No layout (a 16-bit model, weights only): no optimizer state in the file.
        kept = _MOMENTS if layout0 is not None else ()
        for k in kept:
            offsets, total = layout0
            flat[k] = torch.zeros(total)
            for n, off in zip(names, offsets):
                flat[k][off:off + moments[n][k].numel()] = moments[n][k].reshape(-1).float()
        meta["optimizer"] = {"step": ds["step"], "state_names": list(kept)}
        tensors += [("optimizer." + k, flat[k]) for k in kept]
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
                         "step": ds["step"], "state_names": list(_MOMENTS)},
                        [("fp32_flat_partition", flat["fp32"][cut]), ("optimizer.exp_avg", flat["exp_avg"][cut]),
                         ("optimizer.exp_avg_sq", flat["exp_avg_sq"][cut])])
    _write_file(tdir / "mp_rank_00_model_states.pt", meta, tensors)
    (Path(out_dir) / "latest").write_text(tag)
    return tag
