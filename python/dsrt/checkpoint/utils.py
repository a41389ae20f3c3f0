"""deepspeed.checkpoint.utils for dsrt: clone_tensors_for_torch_save."""

import torch


def clone_tensors_for_torch_save(item, device=torch.device("cpu")):
    """DeepSpeed's: a copy of ``item`` (tensors nested in lists, tuples and dicts) whose tensors own their
    storage on ``device``, so torch.save writes each tensor's own bytes, not the views' whole flat buffers."""
    if torch.is_tensor(item):
        if isinstance(device, str):
            device = torch.device(device)
        if device == item.device:
            return item.detach().clone()
        return item.detach().to(device)
    if isinstance(item, list):
        return [clone_tensors_for_torch_save(v, device) for v in item]
    if isinstance(item, tuple):
        return tuple(clone_tensors_for_torch_save(v, device) for v in item)
    if isinstance(item, dict):
        return type(item)({k: clone_tensors_for_torch_save(v, device) for k, v in item.items()})
    return item
