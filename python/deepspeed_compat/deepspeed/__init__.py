"""`deepspeed` on dsrt: DeepSpeed's module names, re-exporting the dsrt package (docs/hf.md).

This is not DeepSpeed: it is the compatibility distribution that makes code written for DeepSpeed (Hugging Face's
Trainer, Accelerate, DeepSpeed scripts) run on libdsrt unchanged. `deepspeed.X` is the very module `dsrt.X`, so
objects and monkeypatches are shared. It must be the only `deepspeed` installed: deepspeed._guard refuses to
import when DeepSpeed's own files are beside it.
"""

import importlib
import sys

from deepspeed import _guard, _refused

_guard.refuse_real_deepspeed()

import dsrt  # noqa: E402  (after the guard: a mixed installation must fail before anything else runs)
from dsrt import (  # noqa: E402,F401
    ADAM_OPTIMIZER,
    LAMB_OPTIMIZER,
    DeepSpeedConfigError,
    DeepSpeedEngine,
    DsrtError,
    accelerator,
    add_config_arguments,
    checkpoint,
    checkpointing,
    comm,
    compression,
    get_accelerator,
    init_distributed,
    initialize,
    log_dist,
    logger,
    ops,
    profiling,
    runtime,
    utils,
    zero,
)

# The DeepSpeed release this stands for (pyproject.toml says why this one); dsrt's own version beside it.
__version__ = "0.14.4"
version = __version__
__version_major__, __version_minor__, __version_patch__ = (int(x) for x in __version__.split("."))
__dsrt_version__ = dsrt.__version__

# deepspeed.<name> -> dsrt.<name>: the names transformers, Accelerate and DeepSpeed scripts import.
_ALIASES = {
    "accelerator": "accelerator",
    "checkpoint": "checkpoint",
    "checkpoint.utils": "checkpoint.utils",
    "checkpointing": "checkpointing",
    "comm": "comm",
    "compression": "compression",
    "compression.helper": "compression.helper",
    "ops": "ops",
    "ops.adagrad": "ops.adagrad",
    "ops.adam": "ops.adam",
    "ops.lamb": "ops.lamb",
    "ops.lion": "ops.lion",
    "profiling": "profiling",
    "profiling.flops_profiler": "profiling.flops_profiler",
    "runtime": "runtime",
    "runtime.activation_checkpointing": "runtime.activation_checkpointing",
    "runtime.activation_checkpointing.checkpointing": "checkpointing",
    "runtime.config": "runtime.config",
    "runtime.dataloader": "runtime.dataloader",
    "runtime.lr_schedules": "runtime.lr_schedules",
    "runtime.engine": "engine",
    "runtime.utils": "runtime.utils",
    "runtime.zero": "zero",
    "runtime.zero.config": "zero.config",
    "runtime.zero.offload_config": "zero.offload_config",
    "runtime.zero.partition_parameters": "zero.partition_parameters",
    "runtime.zero.utils": "zero.utils",
    "utils": "utils",
    "utils.logging": "utils.logging",
    "utils.timer": "utils.timer",
    "utils.zero_to_fp32": "utils.zero_to_fp32",
    "zero": "zero",
}
for _name, _target in _ALIASES.items():
    sys.modules[f"{__name__}.{_name}"] = importlib.import_module(f"dsrt.{_target}")
del _name, _target

# What dsrt does not implement (pipeline, MoE, sparse attention, inference kernels, ...): one ImportError that
# says so, for DeepSpeed's module names (a finder) and its top-level names (__getattr__), _refused.py.
_refused.install(_ALIASES)


def __getattr__(name):
    feature = _refused.refused_name(name)
    if feature is None:
        raise AttributeError(f"module 'deepspeed' has no attribute '{name}'")
    raise _refused.refusal(f"deepspeed.{name}", feature)
