#pragma once
// How ZeRO moves flat buffers between ranks, as a pure function of the process group's backend and the
// buffers' device, so the choice is tested here without NCCL or a GPU.

#include <c10/core/DeviceType.h>

#include <string>

namespace dsrt::zero {

/// The transfer a ZeRO all-gather or reduce-scatter of flat buffers uses.
enum class FlatCollective {
  /// Gloo on host memory: send/recv straight from and into the flat buffer (no per-step allocation).
  kPointToPoint,
  /// NCCL: _allgather_base / _reduce_scatter_base on contiguous flat buffers (one kernel each).
  kFlatBase,
  /// Anything else: the list collectives every c10d backend implements.
  kList,
};

/// The transfer for `backend` (getBackendName(): "gloo", "nccl", ...) moving tensors on `device`.
FlatCollective chooseFlatCollective(const std::string& backend, c10::DeviceType device);

/// Its name in logs and test failures ("point-to-point", "flat-base", "list").
const char* flatCollectiveName(FlatCollective c);

}  // namespace dsrt::zero
