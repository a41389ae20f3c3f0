"""The full 16-bit state dict of an engine's module, as DeepSpeed's _zero3_consolidated_16bit_state_dict
returns it (Accelerate's get_state_dict and Hugging Face's save_model take it at ZeRO-3)."""

from collections import OrderedDict

from dsrt.checkpoint.utils import clone_tensors_for_torch_save


def consolidated_16bit_state_dict(engine, exclude_frozen_parameters=False):
    """Collective. Rank 0 gets module.state_dict() with every parameter whole (gathered at ZeRO-3), in the
    model's dtype, cloned to CPU, tied weights kept tied; the other ranks get None, as with DeepSpeed."""
    from dsrt.zero import GatheredParameters
    module = engine.module
    params = list(module.parameters())
    with GatheredParameters(params):
        if engine.global_rank != 0:
            return None
        state = module.state_dict(keep_vars=False)
        if exclude_frozen_parameters:
            frozen = {n for n, p in module.named_parameters() if not p.requires_grad}
            state = OrderedDict((k, v) for k, v in state.items() if k not in frozen)
        # One clone per storage, so weights tied in the module are one tensor in the file, as DeepSpeed keeps them.
        clones = {}
        out = OrderedDict()
        for name, tensor in state.items():
            key = (tensor.data_ptr(), tensor.dtype, tuple(tensor.shape))
            if key not in clones:
                clones[key] = clone_tensors_for_torch_save(tensor)
            out[name] = clones[key]
        return out
