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

BucketReduceScatter chooseBucketReduceScatter(const std::string& backend, c10::DeviceType device) {
  return chooseFlatCollective(backend, device) == FlatCollective::kFlatBase ? BucketReduceScatter::kPaddedTensor
                                                                             : BucketReduceScatter::kAlltoall;
}

const char* bucketReduceScatterName(BucketReduceScatter c) {
  return c == BucketReduceScatter::kPaddedTensor ? "padded-tensor" : "alltoall";
}

}  // namespace dsrt::zero
