#include "runtime/backend_device_check.h"

namespace dsrt {

std::optional<std::string> backendDeviceRefusal(const std::string& backend, c10::Device device) {
  if (backend != "gloo" || device.is_cpu()) {
    return std::nullopt;
  }
  // Every collective libdsrt issues on Gloo assumes host memory (its point-to-point exchanges above all).
  return "dsrt::Engine: the process group backend 'gloo' cannot move parameters on '" + device.str() +
         "'; use the nccl backend (dist_backend='nccl', or DistOptions::backend \"nccl\"), or keep the model "
         "on the CPU";
}

}  // namespace dsrt
