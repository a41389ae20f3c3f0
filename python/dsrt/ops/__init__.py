"""deepspeed.ops for dsrt: the optimizer classes scripts construct themselves (``deepspeed.ops.adam``,
``deepspeed.ops.lion``, ``deepspeed.ops.adagrad``, ``deepspeed.ops.lamb``)."""

from dsrt.ops import adagrad, adam, lamb, lion

__all__ = ["adagrad", "adam", "lamb", "lion"]
