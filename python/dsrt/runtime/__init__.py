"""deepspeed.runtime for dsrt: the LR scheduler classes scripts build themselves (``lr_schedules``)."""

from dsrt.runtime import lr_schedules

__all__ = ["lr_schedules"]
