"""deepspeed.utils for dsrt: the DeepSpeed logger, log_dist, and zero_to_fp32."""

from dsrt.utils.logging import log_dist, logger, print_dist

__all__ = ["log_dist", "logger", "print_dist"]
