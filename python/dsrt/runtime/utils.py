"""deepspeed.runtime.utils for dsrt: the helpers DeepSpeed scripts import from it, as DeepSpeed defines them.

set_random_seed seeds Python, NumPy and torch; see_memory_usage prints the accelerator's and the host's memory
on rank 0 when forced; clip_grad_norm_ clips gradients by their global norm, averaged over the data-parallel
ranks as DeepSpeed's; copy_to_device / move_to_device walk nested lists, tuples and dicts. The engine clips by
itself (the config's ``gradient_clipping``); these are for scripts that clip or seed on their own.
"""

import gc
from math import inf

import torch
import torch.distributed as dist

from dsrt.accelerator import get_accelerator

_GB = 1024 * 1024 * 1024


def set_random_seed(seed):
    """Set the random seed for common PRNGs used during training: random, numpy, and torch."""
    import random

    import numpy
    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)


def _rank_zero_or_alone() -> bool:
    return not dist.is_initialized() or dist.get_rank() == 0


def see_memory_usage(message, force=False):
    """DeepSpeed's: with ``force=True`` rank 0 prints ``message``, the accelerator's allocated and reserved memory
    (and their peaks, which it then resets) and the host's used virtual memory; otherwise nothing."""
    if not force or not _rank_zero_or_alone():
        return
    import psutil

    gc.collect()  # so that the host's figure counts what is really still held
    acc = get_accelerator()
    print(message)
    print(f"MA {round(acc.memory_allocated() / _GB, 2)} GB \
        Max_MA {round(acc.max_memory_allocated() / _GB, 2)} GB \
        CA {round(acc.memory_reserved() / _GB, 2)} GB \
        Max_CA {round(acc.max_memory_reserved() / _GB)} GB ")
    vm_stats = psutil.virtual_memory()
    used_gb = round((vm_stats.total - vm_stats.available) / _GB, 2)
    print(f"CPU Virtual Memory:  used = {used_gb} GB, percent = {vm_stats.percent}%")
    acc.reset_peak_memory_stats()


def _is_model_parallel_parameter(p) -> bool:
    return bool(getattr(p, "model_parallel", False) or getattr(p, "tensor_model_parallel", False))


def clip_grad_norm_(parameters, max_norm, norm_type=2, mpu=None):
    """Clips the gradients of ``parameters`` in place so that their global ``norm_type``-norm is at most
    ``max_norm``, and returns that norm (a tensor), as DeepSpeed's: the norm is the average of every rank's
    (all_reduce over the data-parallel world, when a process group exists), the clip coefficient is
    ``min(1, max_norm / (norm + 1e-6))``, and ``mpu`` sums (max for inf) over its model-parallel group."""
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    parameters = [p for p in parameters if p.grad is not None]
    norm_type = float(norm_type)
    device = get_accelerator().current_device_name()
    if norm_type == inf:
        total_norm = torch.stack([p.grad.data.abs().max().float() for p in parameters]).max().to(device)
        if mpu is not None:
            dist.all_reduce(total_norm, op=dist.ReduceOp.MAX, group=mpu.get_model_parallel_group())
    else:
        norms = [p.grad.data.detach().float().norm(norm_type) for p in parameters
                 if mpu is None or mpu.get_model_parallel_rank() == 0 or _is_model_parallel_parameter(p)]
        # sum_i ||g_i||_p ** p (DeepSpeed 0.19's fix: 0.14 squared them, right only for norm_type 2)
        total_norm = torch.stack(norms).pow(norm_type).sum().float() if norms else torch.tensor([0.0])
        total_norm = total_norm.to(device)
        if mpu is not None:
            dist.all_reduce(total_norm, op=dist.ReduceOp.SUM, group=mpu.get_model_parallel_group())
        total_norm = total_norm.pow(1. / norm_type)
    # DeepSpeed averages the norm over the data-parallel ranks (their MoE parameters differ).
    if dist.is_initialized():
        total_norm = total_norm * 1.0 / float(dist.get_world_size())
        dist.all_reduce(total_norm)
    total_norm = total_norm.to(parameters[0].device)
    max_norm = torch.tensor([float(max_norm)], device=total_norm.device)
    clip_coef = torch.min(torch.tensor([1.0], device=total_norm.device), max_norm / (total_norm + 1e-6))
    for p in parameters:
        p.grad.data.mul_(clip_coef)
    return total_norm


def _rebuilt(item, at_leaf, is_leaf):
    """``item`` with at_leaf(x) for every x that is_leaf accepts, through nested lists, tuples and dicts."""
    if is_leaf(item):
        return at_leaf(item)
    if isinstance(item, list):
        return [_rebuilt(v, at_leaf, is_leaf) for v in item]
    if isinstance(item, tuple):
        return tuple(_rebuilt(v, at_leaf, is_leaf) for v in item)
    if isinstance(item, dict):
        return {k: _rebuilt(v, at_leaf, is_leaf) for k, v in item.items()}
    return item


def copy_to_device(item, device, criterion_func):
    """A copy of ``item`` (a tensor, or lists, tuples and dicts of them) where what ``criterion_func`` accepts is
    on ``device``."""
    return _rebuilt(item, lambda leaf: leaf.to(device), criterion_func)


def move_to_device(item, device, criterion_func=None):
    """``item`` (a tensor, or lists, tuples and dicts of them) on ``device``: what ``criterion_func`` accepts is moved
    in place (its ``.data`` replaced); without ``criterion_func`` (DeepSpeed 0.17 and later) every leaf is
    ``leaf.to(device)``."""
    if criterion_func is None:
        return _rebuilt(item, lambda leaf: leaf.to(device), lambda x: not isinstance(x, (list, tuple, dict)))

    def move(leaf):
        leaf.data = leaf.to(device).data
        return leaf

    return _rebuilt(item, move, criterion_func)
