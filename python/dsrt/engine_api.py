"""DeepSpeed engine methods scripts call besides the training loop: no_sync(), the batch-size setters, compile().

DeepSpeedEngine (engine.py) inherits them; the C++ engine holds the state (dsrt._C.Engine.set_no_sync,
set_train_batch_size), so its boundary counting, loss scaling and gradient reduction follow at once.
"""

import contextlib
import warnings

import torch

from dsrt import _C
from dsrt.accelerator import get_accelerator


class EngineApi:
    """Mixed into DeepSpeedEngine: needs self._engine (dsrt._C.Engine), self.module and self.dp_world_size."""

    _is_compiled = False

    def compile(self, backend=None, compile_kwargs=None, schedule=None, compiled_autograd_enabled=False):
        """DeepSpeed's engine.compile(): torch.compile of the wrapped module in place
        (module.compile(backend=..., **compile_kwargs)), so the engine's forward runs the compiled module; a
        second call does nothing. The engine's own work (gradient reduction, ZeRO's gathers, the optimizer)
        stays in libdsrt outside the graph, as DeepSpeed's stays outside it without DeepCompile; `schedule`
        belongs to DeepCompile and is ignored as DeepSpeed ignores it then. RuntimeError, as DeepSpeed's,
        where torch cannot compile a module (torch 1.13)."""
        if not hasattr(torch.nn.Module, "compile") or not hasattr(torch, "compiler"):
            raise RuntimeError("compile is not supported in your version of PyTorch.")
        if compiled_autograd_enabled:
            raise _C.DsrtError("engine.compile(compiled_autograd_enabled=True) is not supported by dsrt\n  hint: "
                               "the backward pass runs libdsrt's reduction hooks; compile the forward only")
        if self._is_compiled:
            return
        compile_kwargs = dict(compile_kwargs or {})
        if "backend" in compile_kwargs:
            warnings.warn("The `backend` in `compile_kwargs` will be overridden. Use the `backend` argument instead.")
        self.module.compile(**{**compile_kwargs, "backend": backend or get_accelerator().get_compile_backend()})
        self._is_compiled = True

    @property
    def is_compiled(self) -> bool:
        return self._is_compiled

    def zero_optimization_partition_gradients(self) -> bool:
        """ZeRO stage 2 or 3: gradients are reduce-scattered into partitions (DeepSpeed's query)."""
        return self._engine.zero_stage >= 2

    def zero_optimization_partition_weights(self) -> bool:
        """ZeRO stage 3: the parameters themselves are partitioned (DeepSpeed's query)."""
        return self._engine.zero_stage >= 3

    @contextlib.contextmanager
    def no_sync(self):
        """DeepSpeed's no_sync(): backward() inside accumulates gradients on this rank without reducing
        them, even at a gradient accumulation boundary; the next backward outside the context at a boundary
        reduces everything accumulated. step() inside is illegal, and so is the context at ZeRO stages 2 and
        3 (they reduce while partitioning gradients) or nested; each raises AssertionError as DeepSpeed's (DsrtAssertionError: also a DsrtError)."""
        if self.zero_optimization_partition_gradients():
            raise _C.DsrtAssertionError("no_sync context manager is incompatible with gradient partitioning logic of ZeRO "
                                 f"stage {self._engine.zero_stage}")
        if self._engine.no_sync:
            raise _C.DsrtAssertionError("no_sync context manager reentry is unsupported")
        self._engine.set_no_sync(True)
        try:
            yield
        finally:
            self._engine.set_no_sync(False)

    def set_train_batch_size(self, train_batch_size):
        """DeepSpeed's: keeps the micro-batch and sets gradient_accumulation_steps to train_batch_size /
        (micro-batch x data-parallel ranks); ValueError when that does not divide evenly."""
        if train_batch_size % (self.train_micro_batch_size_per_gpu() * self.dp_world_size) != 0:
            raise ValueError("Train batch size must be divisible by micro-batch data parallelism: "
                             f"train_batch_size {train_batch_size}, train_micro_batch_size_per_gpu "
                             f"{self.train_micro_batch_size_per_gpu()}, {self.dp_world_size} data-parallel ranks")
        self._engine.set_train_batch_size(int(train_batch_size))

    def set_train_micro_batch_size(self, micro_batch_size):
        """DeepSpeed's: keeps gradient_accumulation_steps; the train batch becomes micro_batch_size x
        gradient_accumulation_steps x data-parallel ranks. Data loaders already built keep their size."""
        self._engine.set_train_micro_batch_size(int(micro_batch_size))
