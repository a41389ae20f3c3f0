"""deepspeed.runtime.dataloader for dsrt: RepeatingLoader, DeepSpeed's wrapper that restarts a loader when it is
exhausted, so a script can draw batches forever (``next(it)`` past the end starts a new epoch: the wrapped
loader's sampler reshuffles as its own iteration does)."""


class RepeatingLoader:

    def __init__(self, loader):
        """Wraps an iterable (``loader``) to allow for infinite iteration."""
        self.loader = loader
        self.data_iter = iter(self.loader)

    def __iter__(self):
        return self

    def __next__(self):
        try:
            batch = next(self.data_iter)
        except StopIteration:
            self.data_iter = iter(self.loader)
            batch = next(self.data_iter)
        return batch
