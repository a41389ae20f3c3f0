#pragma once
// Where the c10d C++ API differs between the torches libdsrt builds against (Debian's 1.13 and PyPI's
// 2.7 and later), one named function each, so the rest of the runtime has one code path
// (docs/runtime.md "Two torches"). 1.13's ProcessGroupGloo/NCCL *are* ProcessGroups; from torch 2 they
// are Backends that a ProcessGroup front dispatches to, so each has to be wrapped.

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsrt::compat {

/// Options of a Gloo group: where its sockets bind and how many worker threads it runs.
struct GlooGroupOptions {
  std::chrono::milliseconds timeout;
  int threads = 2;
  /// A network interface name (GLOO_SOCKET_IFNAME); empty: `hostname` below or the default device.
  std::string interface;
  /// A host name or address to bind to; empty: the address this host's name resolves to.
  std::string hostname;
};

/// The data-parallel group on Gloo, for CPU tensors.
c10::intrusive_ptr<c10d::ProcessGroup> makeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int size, const GlooGroupOptions& options);

/// The data-parallel group on NCCL, for CUDA tensors on the current device. Throws c10::Error when this
/// libdsrt was built without NCCL.
c10::intrusive_ptr<c10d::ProcessGroup> makeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int size, std::chrono::milliseconds timeout);

/// The torch version libdsrt was compiled against, "major.minor.patch".
std::string torchVersion();

namespace detail {
template <typename Group, typename = void>
struct HasAllToAllSingle : std::false_type {};
template <typename Group>
struct HasAllToAllSingle<Group, std::void_t<decltype(std::declval<Group&>().all_to_all_single(
                                    std::declval<at::Tensor&>(), std::declval<at::Tensor&>(),
                                    std::declval<std::vector<int64_t>&>(), std::declval<std::vector<int64_t>&>()))>>
    : std::true_type {};
}  // namespace detail

/// All-to-all of one flat tensor with per-rank split sizes: torch's `all_to_all_single`, which newer
/// torches name so (their `alltoall_base` is a deprecated alias) and 1.13 calls `alltoall_base`.
template <typename Group = c10d::ProcessGroup>
c10::intrusive_ptr<c10d::Work> allToAllSingle(Group& group, at::Tensor& output, at::Tensor& input,
                                              std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits) {
  if constexpr (detail::HasAllToAllSingle<Group>::value) {
    return group.all_to_all_single(output, input, outputSplits, inputSplits);
  } else {
    return group.alltoall_base(output, input, outputSplits, inputSplits);
  }
}

}  // namespace dsrt::compat
