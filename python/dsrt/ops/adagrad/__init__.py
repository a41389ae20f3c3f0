"""deepspeed.ops.adagrad for dsrt: DeepSpeedCPUAdagrad.

Passed to initialize() as optimizer=, its hyper-parameters (lr, eps, weight_decay; each group's own
lr/weight_decay/eps) become the config's "Adagrad" block, which the C++ engine steps on the ZeRO partitions.
On its own it steps like DeepSpeed's kernel (csrc/adagrad/cpu_adagrad.cpp), in plain torch: the
weight-decayed gradient feeds the sum of squares, but the step divides the RAW gradient
(torch.optim.Adagrad divides the decayed one; the two agree when weight_decay is 0).
"""

from dsrt.ops._per_parameter import PerParameterOptimizer


class DeepSpeedCPUAdagrad(PerParameterOptimizer):
    """deepspeed.ops.adagrad.DeepSpeedCPUAdagrad's signature; state exp_avg_sq (DeepSpeed's name)."""

    def __init__(self, model_params, lr=1e-2, eps=1e-10, weight_decay=0, amsgrad=False, fp32_optimizer_states=True):
        super().__init__(model_params, dict(lr=lr, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))
        self.fp32_optimizer_states = fp32_optimizer_states

    _state_names = ("exp_avg_sq",)

    def _update(self, group, state, value, grad):
        decayed = grad.add(value, alpha=group["weight_decay"]) if group["weight_decay"] > 0 else grad
        state["exp_avg_sq"].addcmul_(decayed, decayed)
        value.addcdiv_(grad, state["exp_avg_sq"].sqrt().add_(group["eps"]), value=-group["lr"])


__all__ = ["DeepSpeedCPUAdagrad"]
