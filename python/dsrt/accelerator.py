"""deepspeed.accelerator for dsrt: ``get_accelerator()``, the device abstraction recent DeepSpeed scripts
use instead of torch.cuda calls (device names, seeding, memory, the communication backend). CUDA when torch
sees a GPU, else the CPU, as dsrt's engine and process group choose."""

import os

import torch


class _Accelerator:
    def __init__(self, name):
        self._name = name
        self._compile_backend = "inductor"  # DeepSpeed's CUDA and CPU accelerators' default

    # ---- device --------------------------------------------------------------------------------
    def device_name(self, device_index=None):
        if self._name == "cpu" or device_index is None:
            return self._name
        return f"{self._name}:{device_index}"

    def current_device_name(self):
        return f"cuda:{torch.cuda.current_device()}" if self._name == "cuda" else "cpu"

    def device(self, device_index=None):
        return torch.device(self.device_name(device_index))

    def set_device(self, device_index):
        if self._name == "cuda":
            torch.cuda.set_device(device_index)

    def current_device(self):
        return torch.cuda.current_device() if self._name == "cuda" else 0

    def device_count(self):
        return torch.cuda.device_count() if self._name == "cuda" else 1

    def is_available(self):
        return True

    def synchronize(self, device_index=None):
        if self._name == "cuda":
            torch.cuda.synchronize(device_index)

    # ---- streams and events (DeepSpeed's CPU accelerator: no streams; a stream context does nothing) -----
    @property
    def Stream(self):
        return torch.cuda.Stream if self._name == "cuda" else None

    @property
    def Event(self):
        return torch.cuda.Event if self._name == "cuda" else None

    def stream(self, stream):
        import contextlib
        return torch.cuda.stream(stream) if self._name == "cuda" else contextlib.nullcontext()

    def current_stream(self, device_index=None):
        return torch.cuda.current_stream(device_index) if self._name == "cuda" else None

    def default_stream(self, device_index=None):
        return torch.cuda.default_stream(device_index) if self._name == "cuda" else None

    def range_push(self, msg, domain=None, category=None):
        if self._name == "cuda":
            torch.cuda.nvtx.range_push(msg)

    def range_pop(self, domain=None):
        if self._name == "cuda":
            torch.cuda.nvtx.range_pop()

    # ---- what the device supports ------------------------------------------------------------------
    def communication_backend_name(self):
        return "nccl" if self._name == "cuda" else "gloo"

    def communication_backend_version(self):
        return torch.cuda.nccl.version() if self._name == "cuda" else None

    def is_bf16_supported(self):
        return torch.cuda.is_bf16_supported() if self._name == "cuda" else True

    def is_fp16_supported(self):
        return self._name == "cuda"

    def supported_dtypes(self):
        dtypes = [torch.float32, torch.bfloat16]
        return dtypes + [torch.float16] if self._name == "cuda" else dtypes

    def pin_memory(self, tensor, align_bytes=1):
        return tensor.pin_memory() if self._name == "cuda" else tensor

    def on_accelerator(self, tensor):
        return tensor.device.type == self._name

    # ---- random numbers ----------------------------------------------------------------------------
    def manual_seed(self, seed):
        torch.manual_seed(seed)
        if self._name == "cuda":
            torch.cuda.manual_seed(seed)

    def manual_seed_all(self, seed):
        torch.manual_seed(seed)
        if self._name == "cuda":
            torch.cuda.manual_seed_all(seed)

    def random(self):
        return torch.random

    def initial_seed(self):
        return torch.cuda.initial_seed() if self._name == "cuda" else torch.initial_seed()

    def get_rng_state(self, device_index=None):
        if self._name != "cuda":
            return torch.get_rng_state()
        return torch.cuda.get_rng_state() if device_index is None else torch.cuda.get_rng_state(device_index)

    def set_rng_state(self, new_state, device_index=None):
        if self._name != "cuda":
            return torch.set_rng_state(new_state)
        if device_index is None:
            return torch.cuda.set_rng_state(new_state)
        return torch.cuda.set_rng_state(new_state, device_index)

    # ---- memory (0 on the CPU, where torch keeps no allocator statistics) --------------------------
    def empty_cache(self):
        if self._name == "cuda":
            torch.cuda.empty_cache()

    def memory_allocated(self, device_index=None):
        return torch.cuda.memory_allocated(device_index) if self._name == "cuda" else 0

    def max_memory_allocated(self, device_index=None):
        return torch.cuda.max_memory_allocated(device_index) if self._name == "cuda" else 0

    def reset_peak_memory_stats(self, device_index=None):
        if self._name == "cuda":
            torch.cuda.reset_peak_memory_stats(device_index)

    def reset_max_memory_allocated(self, device_index=None):
        if self._name == "cuda":
            torch.cuda.reset_peak_memory_stats(device_index)  # what torch's deprecated reset_max_* does

    def memory_reserved(self, device_index=None):
        return torch.cuda.memory_reserved(device_index) if self._name == "cuda" else 0

    def max_memory_reserved(self, device_index=None):
        return torch.cuda.max_memory_reserved(device_index) if self._name == "cuda" else 0

    def memory_stats(self, device_index=None):
        return torch.cuda.memory_stats(device_index) if self._name == "cuda" else {}

    def total_memory(self, device_index=None):
        if self._name == "cuda":
            # None is the current device, as in DeepSpeed (not device 0).
            return torch.cuda.get_device_properties(device_index).total_memory
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

    # ---- torch.compile (engine.compile's default backend) -----------------------------------------
    def get_compile_backend(self):
        return self._compile_backend

    def set_compile_backend(self, backend):
        import torch._dynamo  # noqa: F401  (only asked for when compiling: torch 2.x)
        supported = torch._dynamo.list_backends(exclude_tags=())
        if backend not in supported:
            raise ValueError(f"{backend} not supported by {self._name}. Supported Backends are {supported}")
        self._compile_backend = backend

    def __repr__(self):
        return f"<dsrt accelerator {self._name}>"


_accelerator = None


def get_accelerator():
    global _accelerator
    if _accelerator is None:
        _accelerator = _Accelerator("cuda" if torch.cuda.is_available() else "cpu")
    return _accelerator


__all__ = ["get_accelerator"]
