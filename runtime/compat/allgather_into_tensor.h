#pragma once
// The flat all-gather (torch.distributed.all_gather_into_tensor) under every LibTorch: ProcessGroup's
// `_allgather_base` exists from torch 1.13 on, but torch 2.15 deprecates it for `all_gather_single`,
// which older versions lack; the call is made once, here, with the deprecation silenced.

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

namespace c10d {
class ProcessGroup;
class Work;
}  // namespace c10d

namespace dsrt::compat {

/// Posts the gather of every rank's `input` into `output` (worldSize x input.numel(), rank r's piece at
/// r * input.numel(); `input` may be that piece of `output`). NCCL implements it; Gloo throws c10::Error.
c10::intrusive_ptr<c10d::Work> allgatherIntoTensor(c10d::ProcessGroup& pg, at::Tensor& output, at::Tensor& input);

}  // namespace dsrt::compat
