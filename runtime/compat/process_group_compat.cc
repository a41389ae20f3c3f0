#include "runtime/compat/process_group_compat.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/version.h>

#ifdef DSRT_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

// The one place that knows which torch it is built against (docs/runtime.md "Two torches").
#define DSRT_TORCH_HAS_BACKEND_SPLIT (TORCH_VERSION_MAJOR >= 2)
#if DSRT_TORCH_HAS_BACKEND_SPLIT && TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 7
#error "libdsrt supports torch 1.13 and torch 2.7 or later (docs/runtime.md \"Two torches\")"
#endif

namespace dsrt::compat {
namespace {

#if DSRT_TORCH_HAS_BACKEND_SPLIT
// torch 2: the group is a front over one backend, registered for the device type its tensors live on.
c10::intrusive_ptr<c10d::ProcessGroup> frontFor(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                c10::intrusive_ptr<c10d::Backend> backend, c10::DeviceType device,
                                                c10d::ProcessGroup::BackendType type) {
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  group->setBackend(device, type, backend);
  group->setDefaultBackend(type);
  return group;
}
#endif

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroup> makeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int size, const GlooGroupOptions& options) {
  auto opts = c10d::ProcessGroupGloo::Options::create(options.timeout);
  if (!options.interface.empty()) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(options.interface));
  } else if (!options.hostname.empty()) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.hostname));
  } else {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  opts->threads = options.threads;
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
#if DSRT_TORCH_HAS_BACKEND_SPLIT
  return frontFor(store, rank, size, gloo, c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO);
#else
  return gloo;
#endif
}

c10::intrusive_ptr<c10d::ProcessGroup> makeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int size, std::chrono::milliseconds timeout) {
#ifdef DSRT_WITH_NCCL
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
#if DSRT_TORCH_HAS_BACKEND_SPLIT
  return frontFor(store, rank, size, nccl, c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL);
#else
  return nccl;
#endif
#else
  (void)store;
  (void)rank;
  (void)size;
  (void)timeout;
  TORCH_CHECK(false, "distributed init: backend 'nccl' unavailable: this libdsrt was built without CUDA and NCCL "
              "(rebuild with -DDSRUN_WITH_CUDA=ON against a CUDA LibTorch, or use gloo on CPU)");
#endif
}

std::string torchVersion() { return TORCH_VERSION; }

}  // namespace dsrt::compat
