"""deepspeed.utils for dsrt: the DeepSpeed logger, log_dist, zero_to_fp32, and the safe_get/safe_set accessors
of a parameter's fp32 master, gradient and optimizer state (tensor_fragment.py), ZeRO-3 leaf modules,
RepeatingLoader, and the script's own timers (timer.py)."""

from dsrt.runtime.dataloader import RepeatingLoader
from dsrt.utils import timer  # noqa: F401  (deepspeed.utils.timer)
from dsrt.utils.logging import log_dist, logger, print_dist
from dsrt.utils.tensor_fragment import (safe_get_full_fp32_param, safe_get_full_grad, safe_get_full_optimizer_state,
                                        safe_get_local_fp32_param, safe_get_local_grad,
                                        safe_get_local_optimizer_state, safe_set_full_fp32_param,
                                        safe_set_full_grad, safe_set_full_optimizer_state,
                                        safe_set_local_fp32_param, safe_set_local_grad,
                                        safe_set_local_optimizer_state)
from dsrt.utils.z3_leaf_module import (get_z3_leaf_modules, set_z3_leaf_module, set_z3_leaf_modules,
                                       unset_z3_leaf_modules, z3_leaf_module)

__all__ = ["RepeatingLoader", "log_dist", "logger", "print_dist", "safe_get_full_fp32_param", "safe_get_full_grad",
           "safe_get_full_optimizer_state", "safe_get_local_fp32_param", "safe_get_local_grad",
           "safe_get_local_optimizer_state", "safe_set_full_fp32_param", "safe_set_full_grad",
           "safe_set_full_optimizer_state", "safe_set_local_fp32_param", "safe_set_local_grad",
           "safe_set_local_optimizer_state", "get_z3_leaf_modules", "set_z3_leaf_module", "set_z3_leaf_modules",
           "unset_z3_leaf_modules", "z3_leaf_module"]
