#include "runtime/zero/collective_choice.h"

namespace dsrt::zero {

FlatCollective chooseFlatCollective(const std::string& backend, c10::DeviceType device) {
  if (backend == "gloo") {
    // Gloo's CUDA tensors are refused at engine construction (backend_device_check.h); host memory only.
    return device == c10::DeviceType::CPU ? FlatCollective::kPointToPoint : FlatCollective::kList;
  }
  if (backend == "nccl" && device == c10::DeviceType::CUDA) {
    return FlatCollective::kFlatBase;
  }
  return FlatCollective::kList;
}

const char* flatCollectiveName(FlatCollective c) {
  switch (c) {
    case FlatCollective::kPointToPoint:
      return "point-to-point";
    case FlatCollective::kFlatBase:
      return "flat-base";
    case FlatCollective::kList:
      return "list";
  }
  return "?";
}

}  // namespace dsrt::zero
