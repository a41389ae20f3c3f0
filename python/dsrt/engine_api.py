"""DeepSpeed engine methods scripts call besides the training loop: no_sync() and the batch-size setters.

DeepSpeedEngine (engine.py) inherits them; the C++ engine holds the state (dsrt._C.Engine.set_no_sync,
set_train_batch_size), so its boundary counting, loss scaling and gradient reduction follow at once.
"""

import contextlib


class EngineApi:
    """Mixed into DeepSpeedEngine: needs self._engine (dsrt._C.Engine) and self.dp_world_size."""

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
        3 (they reduce while partitioning gradients) or nested; each raises AssertionError as DeepSpeed's."""
        if self.zero_optimization_partition_gradients():
            raise AssertionError("no_sync context manager is incompatible with gradient partitioning logic of ZeRO "
                                 f"stage {self._engine.zero_stage}")
        if self._engine.no_sync:
            raise AssertionError("no_sync context manager reentry is unsupported")
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
