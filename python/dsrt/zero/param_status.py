"""DeepSpeed's ZeRO-3 parameter attributes on the parameters a dsrt ZeRO-3 engine manages.

DeepSpeed marks each ZeRO-3 parameter with ``ds_id``, ``ds_status``, ``ds_numel`` and ``ds_shape``, and scripts
rely on them: ``hasattr(p, "ds_id")`` says "this is a ZeRO-3 parameter", and
``p.ds_status == ZeroParamStatus.NOT_AVAILABLE`` picks the ones to gather (DeepSpeed-Chat's
``_z3_params_to_fetch``). dsrt's engine installs a parameter's full tensor when it gathers it and an empty one
when it releases it (runtime/zero/stage3_param_gatherer.cc), so the status is read from the parameter itself:
AVAILABLE while it holds its full numel, NOT_AVAILABLE while it is released. A gather still in flight reads
NOT_AVAILABLE (DeepSpeed: INFLIGHT); gathering it again is what DeepSpeed does with an INFLIGHT one too.

The attributes are properties of ``torch.nn.Parameter`` that exist (``hasattr`` is True) only for parameters a
live ZeRO-3 engine manages; every other parameter reads as before (AttributeError), and one assigned a value
keeps it. dsrt has no ``ds_tensor``:
its partition is a run of the flat model, not a slice of each parameter (docs/python.md).
"""

import weakref
from enum import Enum

import torch


class ZeroParamType(Enum):
    """DeepSpeed's: how a parameter is held."""

    # same as regular pytorch parameters
    NORMAL = 1
    # parameters are partitioned across data parallel process
    PARTITIONED = 2
    # the parameter is held with a unique process rank and is not available on all other process
    REMOTE = 3


class ZeroParamStatus(Enum):
    """DeepSpeed's: whether a ZeRO-3 parameter holds its full value now."""

    # parameters are fully present and ready for use on all processes
    AVAILABLE = 1
    # parameters are either partitioned or remote in some or all process
    NOT_AVAILABLE = 2
    # parameters are being gathered
    INFLIGHT = 3


class _Managed:
    """What a managed parameter's attributes read: its index in its engine, and its full shape."""

    __slots__ = ("engine", "index", "shape")

    def __init__(self, engine, index, shape):
        self.engine = engine
        self.index = index
        self.shape = shape


# id(parameter) -> _Managed, while the engine that manages it is alive.
_managed = {}


def register(engine, params, shapes):
    """Marks ``params`` (full shapes ``shapes``, taken before the engine partitioned them) as ZeRO-3 parameters
    of ``engine``."""
    ref = weakref.ref(engine)
    for index, (p, shape) in enumerate(zip(params, shapes)):
        _managed[id(p)] = _Managed(ref, index, torch.Size(shape))


def unregister(params):
    for p in params:
        _managed.pop(id(p), None)


def _entry(p, attribute):
    entry = _managed.get(id(p))
    if entry is None or entry.engine() is None:
        raise AttributeError(f"'{type(p).__name__}' object has no attribute '{attribute}'")
    return entry


def _ds_id(p):
    return _entry(p, "ds_id").index


def _ds_shape(p):
    return _entry(p, "ds_shape").shape


def _ds_numel(p):
    return _entry(p, "ds_numel").shape.numel()


def _ds_status(p):
    full = _entry(p, "ds_status").shape.numel()
    return ZeroParamStatus.AVAILABLE if p.data.numel() == full else ZeroParamStatus.NOT_AVAILABLE


def _property(name, getter):
    """A property that reads ``getter`` for dsrt's parameters; a value assigned to it (by other code that marks
    parameters, DeepSpeed's own if it shares the process) is stored on the parameter and read back instead."""

    def get(p):
        if name in p.__dict__:
            return p.__dict__[name]
        return getter(p)

    def set_(p, value):
        p.__dict__[name] = value

    def delete(p):
        p.__dict__.pop(name, None)

    return property(get, set_, delete, doc=f"DeepSpeed's {name} (a dsrt ZeRO-3 engine's parameters)")


def install():
    """Adds the ds_* properties to torch.nn.Parameter (once)."""
    for name, getter in (("ds_id", _ds_id), ("ds_shape", _ds_shape), ("ds_numel", _ds_numel),
                         ("ds_status", _ds_status)):
        if not isinstance(getattr(torch.nn.Parameter, name, None), property):
            setattr(torch.nn.Parameter, name, _property(name, getter))

install()
