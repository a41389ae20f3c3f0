"""deepspeed.ops for dsrt: the optimizer classes scripts construct themselves (``deepspeed.ops.adam``,
``deepspeed.ops.lion``, ``deepspeed.ops.adagrad``)."""

from dsrt.ops import adagrad, adam, lion

__all__ = ["adagrad", "adam", "lion"]
