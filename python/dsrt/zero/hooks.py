"""ZeRO stage 3 on unmodified torch.nn models: module hooks drive the C++ parameter coordinator.

Every module that owns trainable parameters gets a forward pre-hook that gathers its own parameters
(``parameters(recurse=False)``, plus any registered as external) and a forward hook that releases them.
The module's tensor inputs and outputs pass through identity autograd nodes of the C++ coordinator, so
its backward gathers the parameters again before the module's gradients are computed and releases them
after, with the coordinator's trace-based prefetch and persistence (stage3_* settings) deciding what
stays. A parameter shared by two modules (tied weights) is gathered for each; one a parent uses directly
is the parent's own and is gathered around the parent's forward.
"""

import copy

import torch

from dsrt import _C
from dsrt.utils.z3_leaf_module import z3_leaf_module


def _map_tensors(value, fn):
    """``value`` with every tensor inside tuples, lists and dicts replaced by fn(tensor)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        mapped = [_map_tensors(v, fn) for v in value]
        return type(value)(*mapped) if hasattr(value, "_fields") else tuple(mapped)
    if isinstance(value, list):
        return [_map_tensors(v, fn) for v in value]
    if isinstance(value, dict):
        out = copy.copy(value)
        for k, v in value.items():
            out[k] = _map_tensors(v, fn)
        return out
    return value


class Stage3Hooks:
    """Installs and owns the hooks of one model; removed when the engine goes away."""

    def __init__(self, model: torch.nn.Module):
        self._handles = []
        self._modules = []
        for module in _hooked_modules(model):
            # A ZeRO-3 leaf (dsrt.utils.set_z3_leaf_modules) gathers its whole subtree, whose modules are not hooked.
            own = [p for p in module.parameters(recurse=z3_leaf_module(module)) if p.requires_grad]
            # Registered before initialize (Hugging Face's models do it in __init__): gathered with the own.
            own += [p for p in getattr(module, "_dsrt_external", []) if all(p is not q for q in own)]
            if not own:
                continue
            module._dsrt_params = own
            module._dsrt_gates = []
            self._modules.append(module)
            self._handles.append(module.register_forward_pre_hook(_pre_forward))
            self._handles.append(module.register_forward_hook(_post_forward))

    def abort_forward(self):
        """Closes the gates a raising forward left open (their post hooks never ran)."""
        for module in self._modules:
            while module._dsrt_gates:
                coordinator, gate = module._dsrt_gates.pop()
                if coordinator >= 0:
                    _C.zero3_close(coordinator, gate)

    def remove(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _hooked_modules(model, seen=None):
    """``model``'s modules in modules() order (each once), without those inside a ZeRO-3 leaf module."""
    seen = set() if seen is None else seen
    if id(model) in seen:
        return
    seen.add(id(model))
    yield model
    if z3_leaf_module(model):
        return
    for child in model.children():
        yield from _hooked_modules(child, seen)


def _eager(fn):
    """Kept out of torch.compile's graphs (engine.compile): the hooks call into libdsrt's coordinator, which
    dynamo cannot trace, and tracing them recompiled per module type until its cache limit. A no-op on torch
    1.13. DeepSpeed keeps its ZeRO-3 hooks eager the same way."""
    compiler = getattr(torch, "compiler", None)
    return compiler.disable(fn) if compiler is not None and hasattr(compiler, "disable") else fn


@_eager
def _pre_forward(module, args):
    coordinator, gate = _C.zero3_open(module._dsrt_params, torch.is_grad_enabled())
    module._dsrt_gates.append((coordinator, gate))
    if coordinator < 0:
        return None
    return _map_tensors(args, lambda t: _C.zero3_wrap_input(coordinator, gate, t))


@_eager
def _post_forward(module, args, output):
    coordinator, gate = module._dsrt_gates.pop()
    if coordinator < 0:
        return None
    _C.zero3_close(coordinator, gate)
    return _map_tensors(output, lambda t: _C.zero3_wrap_output(coordinator, gate, t))


def register_external_parameter(module: torch.nn.Module, parameter: torch.nn.Parameter):
    """DeepSpeed's zero.register_external_parameter: ``module``'s forward uses ``parameter`` although
    another module owns it, so gather it around ``module``'s forward too. Before initialize (a model's
    __init__, as Hugging Face's audio models call it) the registration waits for the ZeRO-3 hooks; without
    a ZeRO-3 engine it has no effect, as DeepSpeed's. RuntimeError for a non-Parameter, as DeepSpeed's."""
    if not isinstance(parameter, torch.nn.Parameter):
        raise RuntimeError("Parameter is not a torch.nn.Parameter")
    external = getattr(module, "_dsrt_external", [])
    if all(p is not parameter for p in external):
        module._dsrt_external = external + [parameter]
    if hasattr(module, "_dsrt_params"):
        if all(p is not parameter for p in module._dsrt_params):
            module._dsrt_params.append(parameter)
        return
    from dsrt import zero
    if zero._managed(parameter):  # an engine exists already, and it hooked no forward of this module
        raise _C.DsrtError(f"register_external_parameter: {type(module).__name__} owns no trainable parameters, so "
                           "the ZeRO-3 engine put no hooks on it\n  hint: register it before dsrt.initialize "
                           "(in the model's __init__, as DeepSpeed's users do)")


def unregister_external_parameter(module: torch.nn.Module, parameter: torch.nn.Parameter):
    """DeepSpeed's zero.unregister_external_parameter: undoes register_external_parameter. RuntimeError, as
    DeepSpeed's, for a non-Parameter or a parameter not registered as external of ``module``."""
    if not isinstance(parameter, torch.nn.Parameter):
        raise RuntimeError("Parameter is not a torch.nn.Parameter")
    external = getattr(module, "_dsrt_external", [])
    if all(p is not parameter for p in external):
        raise RuntimeError("Parameter is not a registered external parameter of module.")
    module._dsrt_external = [p for p in external if p is not parameter]
    module._dsrt_params = [p for p in module._dsrt_params if p is not parameter]
