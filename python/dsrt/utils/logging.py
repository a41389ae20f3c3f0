"""deepspeed.utils.logging for dsrt: the "DeepSpeed" logger and log_dist, as DeepSpeed defines them, so
scripts (and Hugging Face's Trainer, which sets this logger's level) see the same logger and lines."""

import functools
import logging
import sys

import torch.distributed as dist

__all__ = ["log_dist", "logger", "print_dist", "get_dist_msg"]


def _create_logger(name, level):
    # DeepSpeed's LoggerFactory: its own stdout handler and format, not propagated to the root logger.
    formatter = logging.Formatter("[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] %(message)s")
    logger_ = logging.getLogger(name)
    logger_.setLevel(level)
    logger_.propagate = False
    if not logger_.handlers:  # importing both deepspeed and dsrt must not print every line twice
        handler = logging.StreamHandler(stream=sys.stdout)
        handler.setLevel(level)
        handler.setFormatter(formatter)
        logger_.addHandler(handler)
    return logger_


logger = _create_logger("DeepSpeed", logging.WARNING)


@functools.lru_cache(None)
def warning_once(*args, **kwargs):
    """logger.warning, once per distinct message."""
    logger.warning(*args, **kwargs)


logger.warning_once = warning_once


def get_dist_msg(message, ranks=None):
    """"[Rank R] message" when this rank should log it: no process group yet, or its rank is in ``ranks``
    (ranks=[-1]: every rank); None otherwise."""
    initialized = dist.is_available() and dist.is_initialized()
    should_log = not initialized
    ranks = ranks or []
    my_rank = dist.get_rank() if initialized else -1
    if ranks and not should_log:
        should_log = ranks[0] == -1 or my_rank in set(ranks)
    return f"[Rank {my_rank}] {message}" if should_log else None


def log_dist(message, ranks=None, level=logging.INFO):
    """Logs ``message`` at ``level`` on the ranks get_dist_msg() selects."""
    final = get_dist_msg(message, ranks)
    if final is not None:
        logger.log(level, final)


def print_dist(message, ranks=None):
    """Prints (whatever the log level) on the ranks get_dist_msg() selects."""
    final = get_dist_msg(message, ranks)
    if final is not None:
        print(final)
