"""deepspeed.utils' ZeRO-3 leaf modules: a module flagged as a leaf gathers the parameters of its whole subtree
around its own forward, and no module inside it is hooked (MoE layers, whose experts run in a different
order every step: Accelerate flags them through set_z3_leaf_modules). dsrt reads the flag when
dsrt.initialize installs the ZeRO-3 hooks (python/dsrt/zero/hooks.py), so set it before initialize."""

import torch


def z3_leaf_module(model: torch.nn.Module) -> bool:
    """Whether ``model`` is flagged as a ZeRO-3 leaf."""
    return bool(getattr(model, "_z3_leaf", False))


def get_z3_leaf_modules(model: torch.nn.Module):
    """The modules of ``model`` flagged as leaves."""
    return [m for m in model.modules() if z3_leaf_module(m)]


def set_z3_leaf_module(model: torch.nn.Module, flag: bool):
    model._z3_leaf = flag


def _matches(module, cls):
    if isinstance(cls, type):
        return isinstance(module, cls)
    qualified = f"{type(module).__module__}.{type(module).__qualname__}"
    return type(module).__name__ == cls or qualified == cls


def _set_leaf_flags(model, leaf_module_classes, flag, raise_if_not_found):
    if not all(isinstance(c, (type, str)) for c in leaf_module_classes):
        raise AssertionError(f"leaf_module_classes must be a list of types or names, got {leaf_module_classes}")
    found = [m for m in model.modules() if any(_matches(m, c) for c in leaf_module_classes)]
    for module in found:
        module._z3_leaf = flag
    if not found and raise_if_not_found:
        raise ValueError(f"No modules of type {leaf_module_classes} found in model {model}")
    return found


def set_z3_leaf_modules(model: torch.nn.Module, leaf_module_classes, raise_if_not_found: bool = True):
    """DeepSpeed's: flags every module of ``model`` that is an instance of (or whose class name or qualified
    name is) one of ``leaf_module_classes``; returns them. ValueError when none matches (unless told not to)."""
    return _set_leaf_flags(model, leaf_module_classes, True, raise_if_not_found)


def unset_z3_leaf_modules(model: torch.nn.Module, leaf_module_classes, raise_if_not_found: bool = True):
    return _set_leaf_flags(model, leaf_module_classes, False, raise_if_not_found)
