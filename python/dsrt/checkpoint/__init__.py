"""deepspeed.checkpoint for dsrt: ``utils.clone_tensors_for_torch_save``."""

from dsrt.checkpoint import utils

__all__ = ["utils"]
