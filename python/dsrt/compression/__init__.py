"""deepspeed.compression for dsrt: only ``helper``'s recursive_getattr / recursive_setattr, the module-path
helpers scripts (DeepSpeed-Chat's LoRA) import from it. DeepSpeed's compression itself (init_compression,
redundancy_clean, quantization and pruning layers) is not implemented: the compat package's import of those
modules says so (python/deepspeed_compat/deepspeed/_refused.py)."""

from dsrt.compression import helper

__all__ = ["helper"]
