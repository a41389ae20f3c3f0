"""deepspeed.ops for dsrt: the optimizer classes scripts construct themselves (``deepspeed.ops.adam``)."""

from dsrt.ops import adam

__all__ = ["adam"]
