"""A client torch optimizer that dsrt has no built-in equivalent for (RMSprop, Adamax, NAdam, RAdam,
transformers' Adafactor, a script's own Optimizer subclass), stepped by the engine as DeepSpeed steps one.

DeepSpeed keeps such an optimizer and rewires it: each param group's "params" become that group's flat
fp32 partition (with its .grad), and the ZeRO optimizer calls its step() between the gradient reduction
and the all-gather. dsrt does the same over libdsrt's flat fp32 tensor (the whole model at stage 0, this
rank's partition at stages 1-3, in host memory with offload_optimizer): each group's "params" become views
of the runs of that tensor the group owns (several runs where groups interleave in the model's order, one
1-D tensor each), aliasing libdsrt's memory, and their .grad views of the averaged, unscaled, clipped fp32
gradient. The C++ engine keeps everything around the update (loss scaling and the fp16 overflow skip,
clipping, accumulation, the 16-bit copy-back, ZeRO's all-gather); its ClientFlatOptimizer
(runtime/optim/client_flat_optimizer.h) calls the ClientStepper below for the update and for the state.

DeepSpeed's rules apply at initialize(): with ZeRO the config must say "zero_allow_untested_optimizer":
true, and with offload_optimizer "zero_force_ds_cpu_optimizer": false.

Checkpoints: state tensors with one value per element of a parameter view (RMSprop's square_avg, Adam-like
moments) are handed to the engine as flat tensors and saved, loaded and re-partitioned for another world
size exactly like Adam's exp_avg; "step" becomes the engine's step count; other per-view scalars (Adafactor's
RMS) travel spread over their run's elements and come back only where a run still holds one value (the same
world size); state of any other shape is refused with a message.
"""

import warnings

import torch

from dsrt import _C

# Flat state entries that carry a per-view scalar (spread over the view's elements) get this prefix.
_SCALAR = "scalar:"


def _class_name(optimizer) -> str:
    cls = type(optimizer)
    return f"{cls.__module__}.{cls.__name__}"


def check_client_optimizer(config: dict, optimizer, rank: int):
    """DeepSpeed's rules for a client optimizer it has no ZeRO support for (engine._configure_optimizer and
    _do_optimizer_sanity_check), in its order; raises DsrtError, warns on rank 0 when ZeRO goes ahead."""
    name = _class_name(optimizer)
    zero = config.get("zero_optimization") or {}
    stage = int(zero.get("stage", 0) or 0) if isinstance(zero, dict) else 0
    offload = zero.get("offload_optimizer") if isinstance(zero, dict) else None
    offloaded = isinstance(offload, dict) and str(offload.get("device", "none")).lower() in ("cpu", "nvme")
    if stage >= 1 and offloaded and config.get("zero_force_ds_cpu_optimizer", True):
        raise _C.DsrtError(
            f"initialize(optimizer={name}): ZeRO-Offload with a client optimizer steps it on the CPU, which in "
            f"most cases performs poorly, got 'zero_force_ds_cpu_optimizer': true\n  hint: describe Adam, AdamW "
            f"or SGD in the config's \"optimizer\" block (or pass dsrt.ops.adam.DeepSpeedCPUAdam), or set "
            f"\"zero_force_ds_cpu_optimizer\": false to step {name} on the CPU partitions anyway")
    if stage >= 1:
        if not config.get("zero_allow_untested_optimizer", False):
            raise _C.DsrtError(
                f"initialize(optimizer={name}): ZeRO stage {stage} with an untested optimizer (dsrt builds "
                f"Adam, AdamW, SGD, Lion and Adagrad), got no 'zero_allow_untested_optimizer': true\n  hint: add "
                f"\"zero_allow_untested_optimizer\": true to the config to step it on the ZeRO partitions, as "
                f"DeepSpeed asks")
        if rank == 0:
            warnings.warn("**** You are using ZeRO with an untested optimizer, proceed with caution *****",
                          stacklevel=4)
    if len(optimizer.state) > 0:
        raise _C.DsrtError(f"initialize(optimizer={name}): the optimizer has already stepped; its state belongs to "
                           f"the model's tensors, not to the flat fp32 tensor dsrt steps\n  hint: pass the "
                           f"optimizer before its first step")
    # DeepSpeed drops the groups left without parameters.
    optimizer.param_groups[:] = [g for g in optimizer.param_groups if len(g["params"]) != 0]


def placeholder_block(optimizer) -> dict:
    """The config's optimizer block while a client optimizer steps: SGD that keeps no state, with the
    client's default lr as the engine's lr (what get_lr() reports without a scheduler)."""
    lr = optimizer.defaults.get("lr")
    return {"type": "SGD", "params": {"lr": float(lr) if isinstance(lr, (int, float)) else 0.0}}


class ClientStepper:
    """What libdsrt's ClientFlatOptimizer calls (python/csrc/client_optimizer.cc), under the GIL."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self._flat = None
        self._views = []  # (begin, end, view) in the flat tensor's order
        self._forms = {}  # state key -> "tensor" | "int" | "float": how a scalar is stored in the client's state
        self._pending = None  # (entries, step) loaded but not yet written into the client's state

    # ---- the layout -----------------------------------------------------------------------------------
    def bind(self, flat, runs):
        """Rewires every param group's "params" to views of the runs it owns ((end, group) pairs)."""
        self._flat = flat
        per_group = [[] for _ in self.optimizer.param_groups]
        self._views = []
        begin = 0
        for end, group in runs:
            if end > begin:
                view = flat.narrow(0, begin, end - begin)
                per_group[group].append(view)
                self._views.append((begin, end, view))
            begin = end
        for group, params in zip(self.optimizer.param_groups, per_group):
            group["params"] = params

    # ---- the update -----------------------------------------------------------------------------------
    def step(self, params, grads, lr):
        self.materialize()
        for begin, end, view in self._views:
            view.grad = grads.narrow(0, begin, end - begin)
        try:
            self.optimizer.step()
        finally:
            for _, _, view in self._views:
                view.grad = None  # the gradient buffer is the engine's: no reference past the step

    # ---- checkpoints ----------------------------------------------------------------------------------
    def state(self):
        """[(name, flat tensor)]: elementwise entries concatenated over the views, per-view scalars spread
        over their view's elements; refuses state of another shape."""
        self.materialize()
        names, scalars = [], set()
        for _, _, view in self._views:
            for key, value in self.optimizer.state.get(view, {}).items():
                if key == "step":
                    self._forms["step"] = _form(value)
                    continue
                if isinstance(value, torch.Tensor) and value.dim() > 0:
                    if value.shape != view.shape:
                        raise _C.DsrtError(
                            f"checkpoint: {_class_name(self.optimizer)} keeps state '{key}' of shape "
                            f"{tuple(value.shape)} for a parameter view of {view.numel()} elements; dsrt saves "
                            f"only elementwise state, the step and per-parameter scalars")
                elif isinstance(value, (int, float, torch.Tensor)) and not isinstance(value, bool):
                    scalars.add(key)
                    self._forms[key] = _form(value)
                else:
                    raise _C.DsrtError(f"checkpoint: {_class_name(self.optimizer)} keeps state '{key}' of type "
                                       f"{type(value).__name__}; dsrt saves only tensors and numbers")
                if key not in names:
                    names.append(key)
        out = []
        for key in names:
            pieces = []
            for _, _, view in self._views:
                value = self.optimizer.state.get(view, {}).get(key)
                if value is None:
                    pieces.append(torch.zeros(view.numel(), dtype=torch.float32, device=view.device))
                elif key in scalars:
                    pieces.append(torch.full((view.numel(),), float(value), dtype=torch.float32, device=view.device))
                else:
                    pieces.append(value.detach().reshape(-1).to(torch.float32))
            flat = torch.cat(pieces) if pieces else torch.zeros(0, dtype=torch.float32, device=self._flat.device)
            out.append((_SCALAR + key if key in scalars else key, flat))
        return out

    def step_count(self):
        if self._pending is not None:
            return self._pending[1]
        steps = [int(s["step"]) for _, _, v in self._views for s in [self.optimizer.state.get(v, {})] if "step" in s]
        return max(steps, default=0)

    def load_state(self, entries, step):
        """Keeps the loaded state until forms() is known (the checkpoint's client_state comes after)."""
        self._pending = (list(entries), int(step))

    def forms(self):
        """How the client's state stores its scalars (saved with the checkpoint's client_state, so a load
        gives "step" back as the tensor or int the optimizer uses)."""
        for _, _, view in self._views:
            for key, value in self.optimizer.state.get(view, {}).items():
                if key == "step" or not isinstance(value, torch.Tensor) or value.dim() == 0:
                    self._forms[key] = _form(value)
        return dict(self._forms)

    def set_forms(self, forms):
        self._forms.update(forms or {})

    def materialize(self):
        """Writes a loaded state into the client optimizer's state, one entry per parameter view."""
        if self._pending is None:
            return
        entries, step = self._pending
        self._pending = None
        self.optimizer.state.clear()
        if not entries and step == 0:
            return
        for begin, end, view in self._views:
            state = {}
            for name, flat in entries:
                piece = flat.narrow(0, begin, end - begin)
                if name.startswith(_SCALAR):
                    key = name[len(_SCALAR):]
                    if piece.numel() and not bool((piece == piece[0]).all()):
                        raise _C.DsrtError(
                            f"checkpoint: {_class_name(self.optimizer)}'s per-parameter scalar '{key}' differs "
                            f"within this rank's run [{begin}, {end}): the checkpoint was saved on another world "
                            f"size, and dsrt re-partitions only elementwise state\n  hint: load it on the world "
                            f"size it was saved on, or load_checkpoint(load_optimizer_states=False)")
                    if piece.numel():
                        state[key] = _as_form(float(piece[0]), self._forms.get(key, "float"), view.device)
                else:
                    state[name] = piece.to(device=view.device, dtype=view.dtype).clone()
            if "step" in self._forms or step > 0:
                state["step"] = _as_form(step, self._forms.get("step", "int"), view.device)
            self.optimizer.state[view] = state


def _form(value) -> str:
    if isinstance(value, torch.Tensor):
        return "tensor"
    return "int" if isinstance(value, int) else "float"


def _as_form(value, form, device):
    if form == "tensor":
        return torch.tensor(float(value), dtype=torch.float32)
    return int(value) if form == "int" else float(value)
