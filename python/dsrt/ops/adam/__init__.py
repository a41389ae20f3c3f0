"""deepspeed.ops.adam for dsrt: FusedAdam and DeepSpeedCPUAdam.

Scripts such as DeepSpeed-Chat build one of these over their param groups and pass it to initialize();
dsrt reads its hyper-parameters (lr, betas, eps, weight_decay, adam_w_mode, bias_correction; each group's
own lr/weight_decay/betas/eps) into the engine's C++ Adam, which runs vectorised on the CPU or on the
ZeRO-Offload partition, the job these classes do in DeepSpeed. On their own they step like DeepSpeed's
(Adam or AdamW by adam_w_mode, with or without bias correction), in plain torch.
"""

import math

from dsrt.ops._per_parameter import PerParameterOptimizer


class _DeepSpeedAdam(PerParameterOptimizer):
    """Adam/AdamW with DeepSpeed's adam_w_mode and bias_correction switches."""

    def __init__(self, params, lr, bias_correction, betas, eps, weight_decay, adam_w_mode, amsgrad):
        if amsgrad:
            raise RuntimeError(f"{type(self).__name__} does not support the AMSGrad variant (as DeepSpeed's)")
        defaults = dict(lr=lr, bias_correction=bias_correction, betas=tuple(betas), eps=eps,
                        weight_decay=weight_decay)
        super().__init__(params, defaults)
        self.adam_w_mode = adam_w_mode

    _state_names = ("exp_avg", "exp_avg_sq")

    def _update(self, group, state, value, grad):
        beta1, beta2 = group["betas"]
        if group["weight_decay"] != 0:
            if self.adam_w_mode:
                value.mul_(1 - group["lr"] * group["weight_decay"])
            else:
                grad = grad.add(value, alpha=group["weight_decay"])
        state["exp_avg"].mul_(beta1).add_(grad, alpha=1 - beta1)
        state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size, denom = group["lr"], state["exp_avg_sq"].sqrt()
        if group["bias_correction"]:
            step_size /= 1 - beta1 ** state["step"]
            denom.div_(math.sqrt(1 - beta2 ** state["step"]))
        value.addcdiv_(state["exp_avg"], denom.add_(group["eps"]), value=-step_size)


class FusedAdam(_DeepSpeedAdam):
    """deepspeed.ops.adam.FusedAdam's signature: AdamW unless adam_w_mode=False."""

    def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8, adam_w_mode=True,
                 weight_decay=0.0, amsgrad=False, set_grad_none=True):
        super().__init__(params, lr, bias_correction, betas, eps, weight_decay, adam_w_mode, amsgrad)
        self.set_grad_none = set_grad_none


class DeepSpeedCPUAdam(_DeepSpeedAdam):
    """deepspeed.ops.adam.DeepSpeedCPUAdam's signature: AdamW unless adamw_mode=False."""

    def __init__(self, model_params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, adamw_mode=True, fp32_optimizer_states=True):
        super().__init__(model_params, lr, bias_correction, betas, eps, weight_decay, adamw_mode, amsgrad)
        self.fp32_optimizer_states = fp32_optimizer_states


__all__ = ["DeepSpeedCPUAdam", "FusedAdam"]
