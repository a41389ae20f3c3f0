"""The flops_profiler block: at ``profile_step`` rank 0 counts the FLOPs of one forward per module and
prints DeepSpeed's "Flops Profiler" summary (deepspeed/profiling/flops_profiler/profiler.py), to stdout or
``output_file``. The counting is torch's own torch.utils.flop_counter.FlopCounterMode (torch >= 2.1); a
torch without it (Debian's 1.13) gets one warning and no profile."""

import contextlib
import sys
import time
import warnings

import torch

try:
    from torch.utils.flop_counter import FlopCounterMode
except ImportError:  # torch < 2.1
    FlopCounterMode = None

_PRECISION = 2


def number_to_string(num, precision=_PRECISION):
    """DeepSpeed's number_to_string: 1.5e9 -> '1.5 G'."""
    for magnitude, units in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if num >= magnitude:
            return f"{round(num / magnitude, precision):g} {units}"
    if num >= 1 or num == 0:
        return f"{round(num, precision):g} "
    if num >= 1e-3:
        return f"{round(num / 1e-3, precision):g} m"
    return f"{round(num / 1e-6, precision):g} u"


class FlopsProfiler:
    """Counts one forward at ``config.profile_step`` (rank 0 only) and prints the profile after that step."""

    def __init__(self, model, config, rank):
        self.model = model
        self.config = config
        self.rank = rank
        self.counts = None      # module name -> FLOPs of the profiled forward
        self.fwd_latency = 0.0  # seconds
        if rank == 0 and FlopCounterMode is None:
            warnings.warn(f"flops_profiler: this torch ({torch.__version__}) has no torch.utils.flop_counter "
                          "(torch >= 2.1), so no FLOP profile is printed", stacklevel=3)

    def active(self, global_steps):
        return self.rank == 0 and FlopCounterMode is not None and global_steps == self.config.profile_step

    @contextlib.contextmanager
    def profile(self):
        """Counts the forward run inside (once: later forwards of the same step are not added)."""
        if self.counts is not None:
            yield
            return
        counter = FlopCounterMode(display=False)
        start = time.perf_counter()
        with counter:
            yield
        self.fwd_latency = time.perf_counter() - start
        root = type(self.model).__name__
        self.counts = {}
        for name, ops in counter.get_flop_counts().items():
            if name == "Global":
                continue
            fqn = "" if name == root else name[len(root) + 1:] if name.startswith(root + ".") else name
            self.counts[fqn] = sum(ops.values())
        self.counts.setdefault("", counter.get_total_flops())

    def print_model_profile(self, profile_step):
        if self.counts is None:
            return
        out = open(self.config.output_file, "w") if self.config.output_file else sys.stdout
        try:
            self._print(profile_step, out)
        finally:
            if out is not sys.stdout:
                out.close()

    def _print(self, profile_step, out):
        total_flops = self.counts.get("", 0)
        total_params = sum(p.numel() for p in self.model.parameters())
        line = "{:<70}  {:<8}"
        p = lambda *a: print(*a, file=out)  # noqa: E731
        p("\n-------------------------- DeepSpeed Flops Profiler --------------------------")
        p(f"Profile Summary at step {profile_step}:")
        p("Notations:\nnumber of parameters (Params), number of multiply-accumulate operations(MACs),\n"
          "number of floating-point operations (flops), floating-point operations per second (FLOPS),\n"
          "fwd latency (forward propagation latency)\n")
        p(line.format("params per GPU: ", number_to_string(total_params).strip()))
        p(line.format("fwd MACs per GPU: ", number_to_string(total_flops / 2) + "MACs"))
        p(line.format("fwd flops per GPU: ", number_to_string(total_flops)))
        p(line.format("fwd latency: ", number_to_string(self.fwd_latency) + "s"))
        flops_per_s = total_flops / self.fwd_latency if self.fwd_latency else 0
        p(line.format("fwd FLOPS per GPU = fwd flops per GPU / fwd latency: ", number_to_string(flops_per_s) + "FLOPS"))
        p("\n----------------------------- Aggregated Profile per GPU -----------------------------")
        depth_limit = self.config.module_depth
        p(f"Top {self.config.top_modules} modules in terms of flops at each depth (module_depth {depth_limit}):")
        by_depth = {}
        for name, flops in self.counts.items():
            if name:
                by_depth.setdefault(name.count(".") + 1, []).append((flops, name))
        for depth in sorted(by_depth):
            if depth_limit != -1 and depth > depth_limit:
                break
            top = sorted(by_depth[depth], reverse=True)[:self.config.top_modules]
            p(f"depth {depth}: " + ", ".join(f"{name}: {number_to_string(f)}flops" for f, name in top))
        if self.config.detailed:
            p("\n------------------------------ Detailed Profile per GPU ------------------------------")
            for name, module in self.model.named_modules():
                flops = self.counts.get(name, 0)
                params = sum(q.numel() for q in module.parameters())
                share = round(100 * flops / total_flops, _PRECISION) if total_flops else 0
                p(f"{name or type(self.model).__name__} ({type(module).__name__}): "
                  f"{number_to_string(params).strip()} params, {number_to_string(flops)}flops = {share:g}% flops")
        p("------------------------------------------------------------------------------")
        out.flush()
