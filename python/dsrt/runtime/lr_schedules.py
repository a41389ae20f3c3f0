"""deepspeed.runtime.lr_schedules for dsrt: WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest.

Scripts that build a DeepSpeed scheduler themselves (``WarmupLR(optimizer, warmup_max_lr=...)``) and pass
it to initialize(lr_scheduler=...) get DeepSpeed's classes: the same constructor arguments, the same
``step``/``get_lr``/``get_last_lr``/``state_dict`` behaviour, writing each param group's lr (and OneCycle's
betas) as DeepSpeed's do. The numbers come from libdsrt's C++ schedules, the ones the config's "scheduler"
block runs, and bad arguments raise the config's errors. A list or tuple for an lr argument gives each
param group its own value, as DeepSpeed's _format_param.
"""

import json

from dsrt import _C

__all__ = ["LRRangeTest", "OneCycle", "VALID_LR_SCHEDULES", "WarmupCosineLR", "WarmupDecayLR", "WarmupLR"]

# DeepSpeed's list of its scheduler names (Accelerate checks a prepared scheduler's class name against it).
VALID_LR_SCHEDULES = ["LRRangeTest", "OneCycle", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"]


class _Schedule:
    """One C++ schedule per param group; ``last_batch_iteration`` counts the steps taken, -1 before any."""

    def __init__(self, kind, optimizer, params, last_batch_iteration):
        self.optimizer = optimizer
        groups = optimizer.param_groups
        self._per_group = []
        for i, group in enumerate(groups):
            mine = {}
            for key, value in params.items():
                if isinstance(value, (list, tuple)):
                    if len(value) != len(groups):
                        raise ValueError(f"expected {len(groups)} values for {key}, got {len(value)}")
                    value = value[i]
                if value is not None:
                    mine[key] = value
            block = json.dumps({"type": kind, "params": mine})
            self._per_group.append(_C.LrSchedule(block, float(group["lr"])))
        self.last_batch_iteration = last_batch_iteration
        if last_batch_iteration == -1:
            self._apply()  # DeepSpeed sets the starting lr (and betas) when the scheduler is built

    def get_lr(self):
        return [s.lr(self.last_batch_iteration) for s in self._per_group]

    def get_last_lr(self):
        assert getattr(self, "_last_lr", None) is not None, "need to call step() first"
        return self._last_lr

    def step(self, last_batch_iteration=None):
        if last_batch_iteration is None:
            last_batch_iteration = self.last_batch_iteration + 1
        self.last_batch_iteration = last_batch_iteration
        self._apply()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        return {"last_batch_iteration": self.last_batch_iteration}

    def load_state_dict(self, sd):
        self.last_batch_iteration = sd["last_batch_iteration"]

    def _apply(self):
        for group, schedule in zip(self.optimizer.param_groups, self._per_group):
            group["lr"] = schedule.lr(self.last_batch_iteration)
            betas = schedule.betas(self.last_batch_iteration, "betas" in group)
            if betas is not None:
                group["betas"] = tuple(betas)


class LRRangeTest(_Schedule):
    def __init__(self, optimizer, lr_range_test_min_lr=1e-3, lr_range_test_step_size=2000,
                 lr_range_test_step_rate=1.0, lr_range_test_staircase=False, last_batch_iteration=-1):
        super().__init__("LRRangeTest", optimizer, dict(
            lr_range_test_min_lr=lr_range_test_min_lr, lr_range_test_step_size=lr_range_test_step_size,
            lr_range_test_step_rate=lr_range_test_step_rate, lr_range_test_staircase=lr_range_test_staircase),
            last_batch_iteration)


class OneCycle(_Schedule):
    def __init__(self, optimizer, cycle_min_lr, cycle_max_lr, decay_lr_rate=0., cycle_first_step_size=2000,
                 cycle_second_step_size=None, cycle_first_stair_count=0, cycle_second_stair_count=None,
                 decay_step_size=0, cycle_momentum=True, cycle_min_mom=0.8, cycle_max_mom=0.9, decay_mom_rate=0.,
                 last_batch_iteration=-1):
        super().__init__("OneCycle", optimizer, dict(
            cycle_min_lr=cycle_min_lr, cycle_max_lr=cycle_max_lr, decay_lr_rate=decay_lr_rate,
            cycle_first_step_size=cycle_first_step_size, cycle_second_step_size=cycle_second_step_size,
            cycle_first_stair_count=cycle_first_stair_count, cycle_second_stair_count=cycle_second_stair_count,
            decay_step_size=decay_step_size, cycle_momentum=cycle_momentum, cycle_min_mom=cycle_min_mom,
            cycle_max_mom=cycle_max_mom, decay_mom_rate=decay_mom_rate), last_batch_iteration)


class WarmupLR(_Schedule):
    def __init__(self, optimizer, warmup_min_lr=0.0, warmup_max_lr=0.001, warmup_num_steps=1000,
                 warmup_type="log", last_batch_iteration=-1):
        super().__init__("WarmupLR", optimizer, dict(
            warmup_min_lr=warmup_min_lr, warmup_max_lr=warmup_max_lr, warmup_num_steps=warmup_num_steps,
            warmup_type=warmup_type), last_batch_iteration)


class WarmupDecayLR(_Schedule):
    def __init__(self, optimizer, total_num_steps, warmup_min_lr=0.0, warmup_max_lr=0.001, warmup_num_steps=1000,
                 warmup_type="log", last_batch_iteration=-1):
        super().__init__("WarmupDecayLR", optimizer, dict(
            total_num_steps=total_num_steps, warmup_min_lr=warmup_min_lr, warmup_max_lr=warmup_max_lr,
            warmup_num_steps=warmup_num_steps, warmup_type=warmup_type), last_batch_iteration)


class WarmupCosineLR(_Schedule):
    def __init__(self, optimizer, total_num_steps, warmup_min_ratio=0.0, warmup_num_steps=1000, cos_min_ratio=0.0001,
                 warmup_type="log", last_batch_iteration=-1):
        super().__init__("WarmupCosineLR", optimizer, dict(
            total_num_steps=total_num_steps, warmup_min_ratio=warmup_min_ratio, warmup_num_steps=warmup_num_steps,
            cos_min_ratio=cos_min_ratio, warmup_type=warmup_type), last_batch_iteration)
