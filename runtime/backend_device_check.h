#pragma once
// Which (process-group backend, parameter device) pairs the engine can train with. Gloo moves CUDA
// tensors by handing their device pointers to writev, which fails ("Bad address") and aborts the
// process deep inside ZeRO-3; the engine refuses that pair up front with one line that says what to do.

#include <c10/core/Device.h>

#include <optional>
#include <string>

namespace dsrt {

/// The refusal for training parameters on `device` over `backend` (a process group's getBackendName(),
/// e.g. "gloo", "nccl"), or nullopt when the pair works. Pure: no process group, no device needed.
std::optional<std::string> backendDeviceRefusal(const std::string& backend, c10::Device device);

}  // namespace dsrt
