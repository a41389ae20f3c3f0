"""deepspeed.ops.lamb for dsrt: FusedLamb, stepping by itself in plain torch.

dsrt's engine does not build Lamb (the config's "Lamb" is refused: FusedLamb's trust ratio is per parameter
tensor, which the engine's flat partitions do not keep apart; docs/config.md), so this class is for scripts
that step it themselves. Per parameter, as DeepSpeed's kernel (csrc/lamb/fused_lamb_cuda_kernel.cu):

    g = grad / scale;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g
    u = m / (sqrt(v) + eps) + wd*p            (sqrt(v + eps) with eps_inside_sqrt)
    ratio = clamp(|p| / |u|, min_coeff, max_coeff), or 1 when either norm is 0
    p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * ratio * u     (lr alone without bias_correction)

with scale raised to grad_norm / max_grad_norm (DeepSpeed's clip: (grad_norm/scale + 1e-6) / max_grad_norm)
when max_grad_norm > 0 and the caller passes grad_norms.
"""

import torch


class FusedLamb(torch.optim.Optimizer):
    """deepspeed.ops.lamb.FusedLamb's signature; state exp_avg, exp_avg_sq; get_lamb_coeffs() as DeepSpeed's."""

    def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8, eps_inside_sqrt=False,
                 weight_decay=0., max_grad_norm=0., max_coeff=10.0, min_coeff=0.01, amsgrad=False):
        if amsgrad:
            raise RuntimeError("FusedLamb does not support the AMSGrad variant.")
        defaults = dict(lr=lr, bias_correction=bias_correction, betas=betas, eps=eps, weight_decay=weight_decay,
                        max_grad_norm=max_grad_norm, max_coeff=max_coeff, min_coeff=min_coeff)
        super().__init__(params, defaults)
        self.eps_mode = 0 if eps_inside_sqrt else 1
        self.lamb_coeffs = []

    @torch.no_grad()
    def step(self, closure=None, grads=None, output_params=None, scale=1., grad_norms=None):
        if grads is not None or output_params is not None:
            raise RuntimeError("FusedLamb.step(): dsrt steps p.grad into p; grads= and output_params= are not "
                               "supported")
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.lamb_coeffs = []
        for i, group in enumerate(self.param_groups):
            norm = None if grad_norms is None else grad_norms[i] if isinstance(grad_norms, list) else grad_norms
            combined = scale
            if group["max_grad_norm"] > 0 and norm is not None:
                clip = (norm / scale + 1e-6) / group["max_grad_norm"]
                combined = clip * scale if clip > 1 else scale
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
                state["step"] += 1
                t = state["step"]
                grad, value = p.grad.float() / combined, p.float()
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (v + group["eps"]).sqrt() if self.eps_mode == 0 else v.sqrt().add_(group["eps"])
                update = (m / denom).add_(value, alpha=group["weight_decay"])
                w_norm, u_norm = value.norm().item(), update.norm().item()
                coeff = 1.0
                if w_norm != 0 and u_norm != 0:
                    coeff = min(max(w_norm / u_norm, group["min_coeff"]), group["max_coeff"])
                step_size = group["lr"]
                if group["bias_correction"]:
                    step_size = group["lr"] * (1 - beta2 ** t) ** 0.5 / (1 - beta1 ** t)
                value.sub_(update, alpha=step_size * coeff)
                p.copy_(value)
                self.lamb_coeffs.append(torch.tensor(coeff))
        return loss

    def get_lamb_coeffs(self):
        return [c.item() for c in self.lamb_coeffs]


__all__ = ["FusedLamb"]
