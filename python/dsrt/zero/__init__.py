"""deepspeed.zero for dsrt: GatheredParameters, register_external_parameter / unregister_external_parameter,
Init, and ZeroParamStatus / ZeroParamType (the ds_* attributes of a ZeRO-3 engine's parameters: param_status.py)."""

import warnings
import weakref

import torch
import torch.distributed as dist

from dsrt import _C
from dsrt.zero.broadcast import broadcast_from
from dsrt.zero import param_status
from dsrt.zero.hooks import register_external_parameter, unregister_external_parameter
from dsrt.zero.param_status import ZeroParamStatus, ZeroParamType

__all__ = ["GatheredParameters", "Init", "ZeroParamStatus", "ZeroParamType", "register_external_parameter",
           "unregister_external_parameter"]

# id(parameter) -> the ZeRO-3 engine managing it, for GatheredParameters(modifier_rank=...) write-backs.
_engines = {}
# Set once a model was built under zero.Init: with DeepSpeed its parameters are ZeRO-3 parameters before any
# engine exists, and GatheredParameters(modifier_rank=R) broadcasts R's values into them (Hugging Face's
# from_pretrained loads the weights on rank 0 only and relies on that). dsrt builds such models whole, so it
# broadcasts the parameters no engine manages yet.
_built_under_init = False


def _register_engine(engine, params, shapes):
    """``shapes``: the parameters' full shapes, taken before the engine partitioned them (their ds_shape)."""
    ref = weakref.ref(engine)
    for p in params:
        _engines[id(p)] = ref
    param_status.register(engine, params, shapes)


def _unregister_engine(params):
    for p in params:
        _engines.pop(id(p), None)
    param_status.unregister(params)


def _managed(p):
    ref = _engines.get(id(p))
    return ref is not None and ref() is not None


def _write_back(params, values):
    """Every rank stores ``values`` (identical everywhere) as the parameters' new full values: its own
    partition and fp32 master take their slice. Collective, through the engine's full-parameter path."""
    ref = _engines.get(id(params[0]))
    engine = ref() if ref is not None else None
    if engine is None:
        raise _C.DsrtError("GatheredParameters(modifier_rank=...): no live ZeRO-3 engine manages these parameters")
    full = engine._engine.full_params()
    index = {id(p): i for i, p in enumerate(engine._params)}
    for p, v in zip(params, values):
        if id(p) in index:
            full[index[id(p)]] = v
    engine._engine.load_full_params(full)


class GatheredParameters:
    """Context manager: inside it the given ZeRO-3 parameters hold their full values on every rank.

    With ``modifier_rank=R`` the values rank R holds when the block ends are broadcast and written back
    into every rank's partition (and fp32 master), as DeepSpeed's. Parameters no ZeRO-3 engine manages are
    left alone (DeepSpeed's are not ZeRO-3 parameters either), except those of a model built under zero.Init:
    with modifier_rank they take rank R's values, as DeepSpeed's partitioned-at-construction ones do.
    """

    def __init__(self, params, modifier_rank=None, fwd_module=None, enabled=True):
        if isinstance(params, torch.Tensor):
            params = [params]
        params = [p for p in params if p is not None]
        self._params = [p for p in params if _managed(p)]
        # Outside any engine: ZeRO-3 parameters-to-be only when built under zero.Init (see _built_under_init).
        self._loose = [p for p in params if not _managed(p)] if _built_under_init else []
        self._modifier_rank = modifier_rank
        self._enabled = enabled
        self._gate = (-1, -1)

    def __enter__(self):
        if self._enabled and self._params:
            self._gate = _C.zero3_open(self._params, False)
        return self

    def __exit__(self, *exc):
        if self._enabled and self._modifier_rank is not None and exc[0] is None:
            for p in self._loose:
                broadcast_from(p, self._modifier_rank)
        coordinator, gate = self._gate
        if coordinator < 0:
            return False
        modified = None
        if self._modifier_rank is not None and exc[0] is None:
            with torch.no_grad():
                modified = [p.detach().clone() for p in self._params]
                for t in modified:
                    dist.broadcast(t, self._modifier_rank)
        _C.zero3_close(coordinator, gate)
        if modified is not None:
            _write_back(self._params, modified)
        return False


class Init:
    """DeepSpeed's zero.Init: there the model is partitioned while it is built. dsrt builds it whole and
    partitions it at dsrt.initialize (so peak memory at construction is the full model); the context
    manager exists so scripts run unchanged, and says so once."""

    def __init__(self, module=None, data_parallel_group=None, mem_efficient_linear=True, remote_device=None,
                 pin_memory=False, config_dict_or_path=None, config=None, enabled=True, dtype=None, mpu=None):
        self._enabled = enabled

    def __enter__(self):
        global _built_under_init
        if self._enabled:
            _built_under_init = True
            warnings.warn("dsrt.zero.Init: the model is built whole and partitioned by dsrt.initialize",
                          stacklevel=2)
        return self

    def __exit__(self, *exc):
        return False
