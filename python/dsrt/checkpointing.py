"""deepspeed.checkpointing for dsrt: activation checkpointing as scripts call it.

``checkpoint(function, *args)`` recomputes ``function``'s activations during backward instead of keeping
them: torch.utils.checkpoint underneath, reentrant like DeepSpeed's CheckpointFunction (the RNG state is
restored for the recomputation, so dropout matches). ``non_reentrant_checkpoint`` is the non-reentrant
variant. DeepSpeed's extra memory options (partition_activations across model-parallel ranks,
checkpoint_in_cpu, contiguous_memory_optimization) are not built in dsrt (data parallel only, activations
stay where the model runs); ``configure`` accepts them and says once that they have no effect.
"""

import warnings

import torch
import torch.utils.checkpoint

_configured = False
_IGNORED = ("partition_activations", "contiguous_checkpointing", "checkpoint_in_cpu", "synchronize", "profile")


def configure(mpu_, deepspeed_config=None, partition_activations=None, contiguous_checkpointing=None,
              num_checkpoints=None, checkpoint_in_cpu=None, synchronize=None, profile=None):
    """DeepSpeed's signature; the memory options are named in one warning when set, and otherwise ignored."""
    global _configured
    if mpu_ is not None:
        raise RuntimeError("deepspeed.checkpointing.configure(mpu_=...): model parallelism is not supported by "
                           "dsrt (data parallel only)")
    given = dict(partition_activations=partition_activations, contiguous_checkpointing=contiguous_checkpointing,
                 checkpoint_in_cpu=checkpoint_in_cpu, synchronize=synchronize, profile=profile)
    enabled = [name for name in _IGNORED if given[name]]
    if enabled:
        warnings.warn(f"deepspeed.checkpointing.configure: {', '.join(enabled)} have no effect in dsrt; "
                      f"activations are recomputed by torch.utils.checkpoint and stay on the model's device",
                      stacklevel=2)
    _configured = True


def is_configured() -> bool:
    return _configured


def reset():
    """DeepSpeed frees its contiguous activation buffers here; dsrt keeps none."""


def checkpoint(function, *args):
    """Runs function(*args) without keeping its activations; they are recomputed in backward."""
    return torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=True)


def non_reentrant_checkpoint(function, *args):
    return torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=False)


def model_parallel_cuda_manual_seed(seed):
    """Megatron's seeding helper: with data parallelism only, the same seed everywhere."""
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)
