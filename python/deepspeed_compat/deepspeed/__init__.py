"""`deepspeed` on dsrt: DeepSpeed's module names, re-exporting the dsrt package (docs/hf.md).

This is not DeepSpeed: it is the compatibility distribution that makes code written for DeepSpeed (Hugging Face's
Trainer, Accelerate, DeepSpeed scripts) run on libdsrt unchanged. `deepspeed.X` is the very module `dsrt.X`, so
objects and monkeypatches are shared. It must be the only `deepspeed` installed: deepspeed._guard refuses to
import when DeepSpeed's own files are beside it.
"""

import importlib
import sys

from deepspeed import _guard

_guard.refuse_real_deepspeed()

import dsrt  # noqa: E402  (after the guard: a mixed installation must fail before anything else runs)
from dsrt import (  # noqa: E402,F401
    DeepSpeedEngine,
    DsrtError,
    accelerator,
    add_config_arguments,
    checkpoint,
    checkpointing,
    comm,
    init_distributed,
    initialize,
    ops,
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
    "ops": "ops",
    "ops.adagrad": "ops.adagrad",
    "ops.adam": "ops.adam",
    "ops.lamb": "ops.lamb",
    "ops.lion": "ops.lion",
    "runtime": "runtime",
    "runtime.lr_schedules": "runtime.lr_schedules",
    "runtime.engine": "engine",
    "runtime.zero": "zero",
    "runtime.zero.partition_parameters": "zero.partition_parameters",
    "utils": "utils",
    "utils.logging": "utils.logging",
    "utils.zero_to_fp32": "utils.zero_to_fp32",
    "zero": "zero",
}
for _name, _target in _ALIASES.items():
    sys.modules[f"{__name__}.{_name}"] = importlib.import_module(f"dsrt.{_target}")
del _name, _target
