"""deepspeed.ops.lion for dsrt: FusedLion and DeepSpeedCPULion.

Passed to initialize() as optimizer=, their hyper-parameters (lr, betas, weight_decay; each group's own
lr/weight_decay/betas) become the config's "Lion" block, which the C++ engine steps on the ZeRO partitions
(offloaded or not), the job these classes do in DeepSpeed. On their own they step like DeepSpeed's kernels,
in plain torch:

    c = beta1 * m + (1 - beta1) * g;  p = p * (1 - lr * wd) - lr * sign(c);  m = beta2 * m + (1 - beta2) * g

where sign(c) is never 0: DeepSpeedCPULion (csrc/lion/cpu_lion_impl.cpp) steps -lr for +0 and +lr for -0,
FusedLion (csrc/lion/multi_tensor_lion.cu) +lr for both zeros.
"""

import torch

from dsrt.ops._per_parameter import PerParameterOptimizer


class _DeepSpeedLion(PerParameterOptimizer):
    """Lion with DeepSpeed's decoupled weight decay; state exp_avg (DeepSpeed's name)."""

    # Whether c == +0 steps down (the CPU kernel's copysign) rather than up (the CUDA kernel's c > 0 test).
    _positive_zero_steps_down = True

    def __init__(self, params, lr, betas, weight_decay):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay))

    _state_names = ("exp_avg",)

    def _update(self, group, state, value, grad):
        beta1, beta2 = group["betas"]
        lr, decay, m = group["lr"], group["weight_decay"], state["exp_avg"]
        c = m.mul(beta1).add_(grad, alpha=1 - beta1)
        up = torch.signbit(c) if self._positive_zero_steps_down else c <= 0
        if decay > 0:
            value.mul_(1 - lr * decay)
        value.add_(torch.where(up, lr, -lr).to(value.dtype))
        m.mul_(beta2).add_(grad, alpha=1 - beta2)


class FusedLion(_DeepSpeedLion):
    """deepspeed.ops.lion.FusedLion's signature."""

    _positive_zero_steps_down = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), weight_decay=0., set_grad_none=True):
        super().__init__(params, lr, betas, weight_decay)
        self.set_grad_none = set_grad_none


class DeepSpeedCPULion(_DeepSpeedLion):
    """deepspeed.ops.lion.DeepSpeedCPULion's signature."""

    def __init__(self, model_params, lr=1e-3, betas=(0.9, 0.999), weight_decay=0, fp32_optimizer_states=True):
        super().__init__(model_params, lr, betas, weight_decay)
        self.fp32_optimizer_states = fp32_optimizer_states


__all__ = ["DeepSpeedCPULion", "FusedLion"]
