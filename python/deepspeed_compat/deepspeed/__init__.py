"""`deepspeed` on dsrt: DeepSpeed's module names, re-exporting the dsrt package (docs/hf.md).

This is not DeepSpeed: it is the compatibility distribution that makes code written for DeepSpeed (Hugging Face's
Trainer, Accelerate, DeepSpeed scripts) run on libdsrt unchanged. `deepspeed.X` is the very module `dsrt.X`, so
objects and monkeypatches are shared. It must be the only `deepspeed` installed: deepspeed._guard refuses to
import when DeepSpeed's own files are beside it.
"""

import importlib
import sys
import types

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
    elasticity,
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
    "elasticity": "elasticity",
    "elasticity.config": "elasticity.config",
    "elasticity.constants": "elasticity.constants",
    "elasticity.elasticity": "elasticity.elasticity",
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

# deepspeed.git_version_info: where scripts and DeepSpeed's own tests read the version (elasticity's
# target_deepspeed_version). A module object, not a file: a git_version_info.py here is how _guard recognises
# DeepSpeed's own files.
git_version_info = types.ModuleType(f"{__name__}.git_version_info", "DeepSpeed's build information, for dsrt")
git_version_info.version = __version__
git_version_info.git_hash = f"dsrt-{dsrt.__version__}"
git_version_info.git_branch = "dsrt"
git_version_info.installed_ops = {}  # dsrt builds no JIT ops: its optimizers are part of libdsrt
git_version_info.compatible_ops = {}
sys.modules[git_version_info.__name__] = git_version_info
__git_hash__, __git_branch__ = git_version_info.git_hash, git_version_info.git_branch

# What dsrt does not implement (pipeline, MoE, sparse attention, inference kernels, ...): one ImportError that
# says so, for DeepSpeed's module names (a finder) and its top-level names (__getattr__), _refused.py.
_refused.install(_ALIASES)


def __getattr__(name):
    feature = _refused.refused_name(name)
    if feature is None:
        raise AttributeError(f"module 'deepspeed' has no attribute '{name}'")
    raise _refused.refusal(f"deepspeed.{name}", feature)
