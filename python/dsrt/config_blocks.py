"""The ds_config blocks the Python package carries out itself (runtime/config/top_level_keys.h lists them):
the monitors, the comms logger and the FLOP profiler. The C++ engine records these blocks and leaves them
to this package."""

import json
from types import SimpleNamespace

from dsrt import _C
from dsrt.monitor.config import monitor_config

# DeepSpeed's FlopsProfilerConfig defaults (deepspeed/profiling/config.py).
_FLOPS_DEFAULTS = {"enabled": False, "recompute_fwd_factor": 0.0, "profile_step": 1, "module_depth": -1,
                   "top_modules": 1, "detailed": True, "output_file": None}


def config_document(config):
    """The config as a dict: ``config`` itself, or the file it names read as the engine reads it."""
    if isinstance(config, dict):
        return config
    return json.loads(_C.read_config_document(str(config)))


def _flops_profiler(doc, source):
    block = doc.get("flops_profiler") or {}
    unknown = sorted(set(block) - set(_FLOPS_DEFAULTS))
    if unknown:
        raise _C.DsrtError(f"{source}: flops_profiler.{unknown[0]}: unknown key (keys: {', '.join(_FLOPS_DEFAULTS)})")
    return SimpleNamespace(**dict(_FLOPS_DEFAULTS, **block))


def client_blocks(config, source):
    """monitor (dsrt.monitor.config), comms_logger (a dict) and flops_profiler (a namespace) of ``config``
    (a dict or a path). Raises DsrtError naming the key of a malformed block."""
    doc = config_document(config)
    try:
        monitor = monitor_config(doc, source)
    except ValueError as e:
        raise _C.DsrtError(str(e)) from None
    comms = doc.get("comms_logger") or {}
    if not isinstance(comms, dict):
        raise _C.DsrtError(f"{source}: comms_logger: expected an object, got '{comms}'")
    return SimpleNamespace(monitor=monitor, comms_logger=comms, flops_profiler=_flops_profiler(doc, source))
