"""Broadcasting one tensor's value from a rank into every rank's copy, for parameters no engine manages
(frozen ones, or a model not yet wrapped): DeepSpeed broadcasts those too (_broadcast_model at initialize,
GatheredParameters(modifier_rank=R) on exit)."""

import torch
import torch.distributed as dist


def broadcast_from(tensor: torch.Tensor, src: int):
    """Collective: every rank's ``tensor`` takes rank ``src``'s values. Dtypes Gloo cannot send (bfloat16)
    travel as fp32, which holds them exactly."""
    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() == 1:
        return
    with torch.no_grad():
        data = tensor.data
        wire = data
        if dist.get_backend() == "gloo" and data.dtype in (torch.bfloat16, torch.float16):
            wire = data.float()
        dist.broadcast(wire, src)
        if wire is not data:
            data.copy_(wire)
