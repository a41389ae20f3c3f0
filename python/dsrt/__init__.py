"""dsrt: DeepSpeed's Python API on libdsrt's C++ engine.

A script written for DeepSpeed runs after changing only its import::

    import dsrt as deepspeed
    engine, optimizer, loader, scheduler = deepspeed.initialize(args=args, model=model,
                                                                model_parameters=model.parameters())
    loss = engine(batch)
    engine.backward(loss)
    engine.step()

DDP, ZeRO stages 1-3, CPU offload, fp16/bf16 and checkpoints run in C++ (libdsrt); this package only adapts
DeepSpeed's calling conventions to it. Errors raised by the engine are ``dsrt.DsrtError`` (a RuntimeError);
where DeepSpeed fails an assert they are ``dsrt.DsrtAssertionError``, both a DsrtError and an AssertionError.
"""

import torch  # noqa: F401  (torch's Python bindings must be loaded before dsrt._C uses their types)

from dsrt._C import DsrtAssertionError, DsrtError
from dsrt import (accelerator, checkpoint, checkpointing, comm, compression, elasticity, ops, profiling, runtime,
                  utils, zero)
from dsrt.accelerator import get_accelerator
from dsrt.arguments import add_config_arguments
from dsrt.comm import init_distributed
from dsrt.engine import DeepSpeedEngine
from dsrt.initialize import initialize
from dsrt.runtime.config import ADAM_OPTIMIZER, LAMB_OPTIMIZER, DeepSpeedConfigError
from dsrt.utils.logging import log_dist, logger
from dsrt.zero import partition_parameters as _partition_parameters  # noqa: F401  (for the path below)

# DeepSpeed's path to ZeRO, for scripts that reach it by attribute under `import dsrt as deepspeed`
# (deepspeed.runtime.zero.partition_parameters.ZeroParamStatus): deepspeed.runtime.zero is dsrt.zero.
runtime.zero = zero

__version__ = "0.1.0"

__all__ = [
    "ADAM_OPTIMIZER",
    "LAMB_OPTIMIZER",
    "DeepSpeedConfigError",
    "DeepSpeedEngine",
    "accelerator",
    "checkpointing",
    "ops",
    "runtime",
    "DsrtAssertionError",
    "DsrtError",
    "add_config_arguments",
    "comm",
    "compression",
    "elasticity",
    "get_accelerator",
    "init_distributed",
    "initialize",
    "log_dist",
    "logger",
    "profiling",
    "zero",
]
