"""Values of a ds_config dict that JSON cannot carry to the C++ parser as they are.

Accelerate writes ``steps_per_print = float("inf")`` ("never print"); ``json.dumps`` would emit ``Infinity``,
which is not JSON. DeepSpeed compares ``global_steps % steps_per_print == 0``, which an infinite period never
satisfies, so it becomes "absent" (the C++ engine then never prints). Any other non-finite number is refused
here, naming its key, instead of failing later as an anonymous JSON parse error.
"""

import math

from dsrt import _C

# Keys whose infinite value DeepSpeed reads as "never": dropped before the config reaches C++.
_NEVER_WHEN_INFINITE = ("steps_per_print",)


def finite_config(config: dict, source: str) -> dict:
    """A copy of ``config`` without the infinite "never" values; DsrtError naming the first other non-finite."""
    out = {k: v for k, v in config.items()
           if not (k in _NEVER_WHEN_INFINITE and isinstance(v, float) and math.isinf(v) and v > 0)}
    _check_finite(out, "", source)
    return out


def _check_finite(value, path, source):
    if isinstance(value, float) and not math.isfinite(value):
        raise _C.DsrtError(f"{source}: {path}: expected a finite number, got '{value}'")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{path}.{k}" if path else str(k), source)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{path}[{i}]", source)


def fp16_auto_cast(config) -> bool:
    """DeepSpeed's fp16.auto_cast (default False): the engine casts floating inputs to half before forward."""
    if isinstance(config, str):
        from dsrt.config_file import read_config_file
        config = read_config_file(config)
    fp16 = config.get("fp16") or {}
    return isinstance(fp16, dict) and fp16.get("auto_cast") is True
