#pragma once
// The flat reduce-scatter (torch.distributed.reduce_scatter_tensor) under every LibTorch: ProcessGroup's
// `_reduce_scatter_base` exists from torch 1.13 on, but torch 2.15 deprecates it for
// `reduce_scatter_single`, which older versions lack; the call is made once, here, with the deprecation
// silenced.

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

namespace c10d {
class ProcessGroup;
class Work;
}  // namespace c10d

namespace dsrt::compat {

/// Posts the sum over ranks of `input` (worldSize x output.numel()), rank r keeping piece r in `output`.
/// NCCL implements it, and Gloo from torch 2.x; torch 1.13's Gloo throws c10::Error.
c10::intrusive_ptr<c10d::Work> reduceScatterTensor(c10d::ProcessGroup& pg, at::Tensor& output, at::Tensor& input);

}  // namespace dsrt::compat
