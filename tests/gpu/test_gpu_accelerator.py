"""dsrt.accelerator.get_accelerator() on a GPU answers as DeepSpeed's CUDA accelerator does
(deepspeed/accelerator/cuda_accelerator.py): names, the nccl backend, streams, and torch.cuda's memory counters."""

from gpu_support import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dsrt as deepspeed  # noqa: E402
from gpu_support import DEVICE_TYPE  # noqa: E402

if DEVICE_TYPE != "cuda":
    pytest.skip("harness check on the CPU: the accelerator is the CPU one there", allow_module_level=True)


def test_names_backend_and_device_are_cudas():
    acc = deepspeed.accelerator.get_accelerator()
    torch.cuda.set_device(0)
    assert acc.device_name() == "cuda" and acc.device_name(0) == "cuda:0"
    assert acc.current_device_name() == "cuda:0" and acc.device(0) == torch.device("cuda", 0)
    assert acc.communication_backend_name() == "nccl"
    assert acc.communication_backend_version() == torch.cuda.nccl.version()
    assert acc.device_count() == torch.cuda.device_count()
    assert acc.is_fp16_supported() and acc.is_bf16_supported()
    assert acc.Stream is torch.cuda.Stream and acc.Event is torch.cuda.Event
    assert acc.on_accelerator(torch.zeros(1, device="cuda")) and not acc.on_accelerator(torch.zeros(1))


def test_memory_counters_are_torch_cudas_and_see_an_allocation():
    acc = deepspeed.accelerator.get_accelerator()
    acc.synchronize()
    acc.reset_peak_memory_stats()
    before = acc.memory_allocated()
    x = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")  # 64 MiB
    assert acc.memory_allocated() == torch.cuda.memory_allocated() >= before + (64 << 20)
    assert acc.max_memory_allocated() == torch.cuda.max_memory_allocated() >= before + (64 << 20)
    assert acc.memory_reserved() == torch.cuda.memory_reserved() >= acc.memory_allocated()
    assert acc.total_memory() == torch.cuda.get_device_properties(0).total_memory
    del x
