"""deepspeed.runtime.activation_checkpointing for dsrt: DeepSpeed's path to the activation checkpointing module.
Its ``checkpointing`` is dsrt.checkpointing itself (one module, one configuration), importable by that path too."""

import sys

from dsrt import checkpointing

sys.modules[f"{__name__}.checkpointing"] = checkpointing

__all__ = ["checkpointing"]
