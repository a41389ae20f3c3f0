"""deepspeed.runtime.zero.partition_parameters for dsrt: ZeroParamStatus, ZeroParamType, GatheredParameters, Init,
register_external_parameter (as DeepSpeed's module has them), and the names transformers patches around zero.Init.

DeepSpeed's zero.Init wraps torch's tensor constructors so parameters are born partitioned; transformers'
prevent_arange_dtype_change() swaps that wrapper for one that leaves torch.arange alone. dsrt's zero.Init builds
the model whole and wraps nothing, so the wrapper here returns the constructor unchanged: the patch finds the
names it expects and has nothing to undo.
"""

import torch

from dsrt.accelerator import get_accelerator  # noqa: F401  (transformers reads pp.get_accelerator)
from dsrt.zero import GatheredParameters, Init, register_external_parameter  # noqa: F401
from dsrt.zero.param_status import ZeroParamStatus, ZeroParamType  # noqa: F401

_orig_torch_arange = torch.arange


def zero_wrapper_for_fp_tensor_constructor(fn, target_fp_dtype=None, target_device=None):
    """dsrt does not re-type tensors built under zero.Init: ``fn`` itself."""
    return fn
