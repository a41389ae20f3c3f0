"""The stepping loop deepspeed.ops' classes share when a script steps them itself (not through initialize()).

Each parameter with a gradient is updated in fp32 (its value and gradient as fp32 tensors, written back into
the parameter afterwards), with fp32 state tensors named by the subclass created at its first step, as
DeepSpeed's kernels keep their state; the subclass gives only the update rule.
"""

import torch


class PerParameterOptimizer(torch.optim.Optimizer):
    """A torch optimizer whose step() runs `_update` on every parameter that has a gradient."""

    # fp32 state tensors shaped like the parameter, zero before the first step (besides the step count).
    _state_names = ()

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    for name in self._state_names:
                        state[name] = torch.zeros_like(p, dtype=torch.float32)
                state["step"] += 1
                value = p.float()
                self._update(group, state, value, p.grad.float())
                p.copy_(value)
        return loss

    def _update(self, group, state, value, grad):
        """Updates `value` (the fp32 parameter) in place from `grad` and `state`, with `group`'s settings."""
        raise NotImplementedError
