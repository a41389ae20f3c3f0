"""deepspeed.runtime for dsrt: the LR scheduler classes scripts build themselves (``lr_schedules``), DeepSpeed's
helpers (``utils``), optimizer-name constants (``config``) and RepeatingLoader (``dataloader``)."""

from dsrt.runtime import config, dataloader, lr_schedules, utils

__all__ = ["config", "dataloader", "lr_schedules", "utils"]
