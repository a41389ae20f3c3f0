"""The optimizer and LR scheduler objects initialize() returns, and client optimizers translated to the
config's optimizer block.

The C++ engine owns the optimizer (its state is partitioned by ZeRO, offloaded, checkpointed). What
initialize() returns as the optimizer is a torch.optim.Optimizer whose param_groups are the live
hyper-parameters of those groups: the engine reads each group's lr, weight_decay, betas and eps before
every step, so a torch or Hugging Face LR scheduler built on it (or on the client optimizer that was
passed in, whose param_groups it shares), or a script setting ``group["lr"]`` by hand, moves the lr the
engine uses, as with DeepSpeed. A client torch.optim.Adam/AdamW/SGD/Adagrad is accepted by reading its
hyper-parameters into the optimizer block (as are deepspeed.ops.adam's FusedAdam and DeepSpeedCPUAdam,
deepspeed.ops.lion's FusedLion and DeepSpeedCPULion, deepspeed.ops.adagrad's DeepSpeedCPUAdagrad);
any other torch optimizer is stepped as it is, over the flat partitions (dsrt/client_optimizer.py).
"""

import warnings

import torch

from dsrt import _C
from dsrt.runtime import lr_schedules

_HINT = "\n  hint: remove optimizer= and describe the optimizer in the config's \"optimizer\" block " \
        "(Adam, AdamW, SGD, Lion or Adagrad), which dsrt partitions and offloads"

# The engine applies lr, weight_decay, betas and eps group by group; these torch settings must be the same in
# all groups (the flat partitions share one update rule).
_SHARED = ("momentum", "dampening", "nesterov", "amsgrad", "maximize", "foreach", "capturable",
           "differentiable", "fused", "bias_correction", "adam_w_mode", "lr_decay", "initial_accumulator_value")


def check_groups(groups, defaults, where):
    """Refuses groups whose update rule differs from ``defaults`` in a setting dsrt cannot vary per group."""
    for i, g in enumerate(groups):
        for key in _SHARED:
            if key in g and key in defaults and g[key] != defaults[key]:
                raise _C.DsrtError(f"{where}: parameter group {i} sets {key}={g[key]!r} but the optimizer uses "
                                   f"{defaults[key]!r}; dsrt varies only lr, weight_decay, betas and eps per group")


class EngineOptimizer(torch.optim.Optimizer):
    """What initialize() returns as its optimizer: the engine's optimizer seen as a torch optimizer.

    ``param_groups`` hold each group's hyper-parameters (torch's keys); schedulers write their lr there.
    Stepping is the engine's: ``optimizer.step()`` is refused with the call to make instead.
    """

    def __init__(self, engine, groups, defaults, client=None):
        super().__init__(groups, defaults)
        if client is not None:
            # The client optimizer's own dicts: a scheduler built on it moves the engine's lr.
            self.param_groups = client.param_groups
        self._client = client
        self._engine = engine
        self._step_count = 0
        self.overflow = False  # DeepSpeed's: the last optimizer step was skipped (fp16 overflow)

    @property
    def cur_scale(self):
        return self._engine.cur_scale

    loss_scale = cur_scale

    def zero_grad(self, set_to_none=True):
        self._engine.zero_grad()

    def step(self, closure=None):
        raise _C.DsrtError("optimizer.step(): the engine steps its optimizer\n  hint: call engine.step()")

    def count_step(self):
        """Called by the engine after an optimizer step was taken: torch's LR schedulers check that the
        optimizer stepped before them (their "lr_scheduler.step() before optimizer.step()" warning)."""
        for opt in (self, self._client):
            if opt is not None:
                opt._step_count = getattr(opt, "_step_count", 0) + 1
                opt._opt_called = True  # torch >= 2.0's marker for the same check

    def group_settings(self, engine_schedules):
        """(lr, weight_decay, beta1, beta2, eps) per group for the C++ engine. With a config scheduler the
        engine's schedule sets lr (and OneCycle's betas) for every group, as DeepSpeed's schedulers do."""
        out = []
        for g in self.param_groups:
            betas = g.get("betas")
            lr = None if engine_schedules else float(g["lr"])
            b1, b2 = (None, None) if engine_schedules or betas is None else (float(betas[0]), float(betas[1]))
            eps = g.get("eps")
            out.append((lr, float(g.get("weight_decay", 0.0)), b1, b2, None if eps is None else float(eps)))
        return out

    def hyper_parameters(self):
        """The groups' hyper-parameters (no tensors), for checkpoints."""
        return [{k: list(v) if isinstance(v, tuple) else v for k, v in g.items() if k != "params"}
                for g in self.param_groups]

    def load_hyper_parameters(self, saved):
        """Restores what hyper_parameters() returned, when the groups still match in number."""
        if not saved or len(saved) != len(self.param_groups):
            return
        for group, values in zip(self.param_groups, saved):
            group.update({k: tuple(v) if k == "betas" else v for k, v in values.items()})


class EngineLRScheduler:
    """What initialize() returns as its lr_scheduler when the config has a scheduler block (engine_lr_scheduler
    gives it the block's class too)."""

    def __init__(self, engine, optimizer):
        self._engine = engine
        self.optimizer = optimizer

    @property
    def last_batch_iteration(self):
        """DeepSpeed's counter: -1 before the first optimizer step, then the steps taken (skipped fp16 steps
        do not advance it)."""
        return self._engine.last_batch_iteration

    def get_lr(self):
        return [self._engine.get_lr()] * len(self.optimizer.param_groups)

    get_last_lr = get_lr

    def state_dict(self):
        return {}  # the engine's checkpoint holds the schedule position

    def load_state_dict(self, state_dict):
        pass

    def step(self, *args, **kwargs):
        # DeepSpeed's engine already steps its scheduler at every optimizer step; a second step here would
        # advance it twice there. dsrt does not: it says so once.
        warnings.warn("lr_scheduler.step(): the engine steps the scheduler at every optimizer step; "
                      "this call does nothing", stacklevel=2)


def engine_lr_scheduler(engine, optimizer):
    """The engine's scheduler as an instance of the config block's class (deepspeed.runtime.lr_schedules.WarmupLR
    for "type": "WarmupLR", ...), as DeepSpeed's engine builds one: scripts and Accelerate check the type or its
    name. The engine computes and steps the schedule; the class only answers isinstance and type().__name__."""
    kind = getattr(lr_schedules, engine.scheduler_type)
    return _ENGINE_SCHEDULER_CLASSES.setdefault(kind, type(kind.__name__, (EngineLRScheduler, kind), {
        "__module__": kind.__module__, "__doc__": EngineLRScheduler.__doc__}))(engine, optimizer)


_ENGINE_SCHEDULER_CLASSES = {}


class UntranslatableOptimizer(_C.DsrtError):
    """optimizer_block's refusal of a class dsrt has no built-in equivalent for: initialize() then steps the
    client optimizer itself over the flat partitions (dsrt/client_optimizer.py)."""


_TRANSLATABLE = {torch.optim.Adam: "Adam", torch.optim.AdamW: "AdamW", torch.optim.SGD: "SGD",
                 torch.optim.Adagrad: "Adagrad"}


def _kind_of(optimizer):
    """The config type of a translatable optimizer (deepspeed.ops' classes by family), else None."""
    from dsrt.ops.adagrad import DeepSpeedCPUAdagrad
    from dsrt.ops.adam import _DeepSpeedAdam
    from dsrt.ops.lion import _DeepSpeedLion
    for family, kind in ((_DeepSpeedAdam, "Adam"), (_DeepSpeedLion, "Lion"), (DeepSpeedCPUAdagrad, "Adagrad")):
        if isinstance(optimizer, family):
            return kind
    return _TRANSLATABLE.get(type(optimizer))


def _has_stepped(optimizer):
    """torch.optim.Adagrad fills its state (sum, step 0) when built: only a step > 0 counts."""
    return any(not isinstance(s, dict) or float(s.get("step", 1)) > 0 for s in optimizer.state.values())


def optimizer_block(optimizer) -> dict:
    """The ds_config optimizer block equivalent to a client torch.optim.Adam/AdamW/SGD (its defaults; the
    groups keep their own lr/weight_decay/betas/eps); raises DsrtError naming what cannot be carried over
    (other classes, settings that differ per group, amsgrad, existing state)."""
    from dsrt.ops.adam import _DeepSpeedAdam
    kind = _kind_of(optimizer)
    if kind is None:
        raise UntranslatableOptimizer(f"initialize(optimizer=...): dsrt cannot partition a client optimizer of type "
                           f"{type(optimizer).__module__}.{type(optimizer).__name__}: the C++ engine steps its "
                           f"own Adam/AdamW/SGD/Lion/Adagrad on the ZeRO partitions{_HINT}")
    d = optimizer.defaults
    check_groups(optimizer.param_groups, d, f"initialize(optimizer={kind})")
    if _has_stepped(optimizer):
        raise _C.DsrtError(f"initialize(optimizer=...): the {kind} optimizer has already stepped; its state "
                           f"cannot move into the engine{_HINT}")
    for flag in ("amsgrad", "maximize", "differentiable"):
        if d.get(flag):
            raise _C.DsrtError(f"initialize(optimizer=...): {kind}({flag}=True) is not supported by dsrt{_HINT}")
    lr = float(d["lr"])
    if kind == "SGD":
        params = {"lr": lr, "momentum": d["momentum"], "dampening": d["dampening"],
                  "nesterov": d["nesterov"], "weight_decay": d["weight_decay"]}
    elif kind == "Lion":
        params = {"lr": lr, "betas": list(d["betas"]), "weight_decay": d["weight_decay"]}
    elif kind == "Adagrad":  # DeepSpeedCPUAdagrad has no lr_decay / initial_accumulator_value: torch's 0
        params = {"lr": lr, "eps": d["eps"], "weight_decay": d["weight_decay"]}
        params.update({k: d[k] for k in ("lr_decay", "initial_accumulator_value") if d.get(k)})
    else:
        params = {"lr": lr, "betas": list(d["betas"]), "eps": d["eps"], "weight_decay": d["weight_decay"]}
        if isinstance(optimizer, _DeepSpeedAdam):  # deepspeed.ops.adam: its own switches
            params["adam_w_mode"] = bool(optimizer.adam_w_mode)
            params["bias_correction"] = bool(d["bias_correction"])
        elif kind == "Adam":
            params["adam_w_mode"] = False  # torch.optim.Adam's weight decay is L2, not decoupled
    return {"type": kind, "params": params}

