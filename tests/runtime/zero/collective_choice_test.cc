// chooseFlatCollective from a table: which transfer ZeRO uses for each backend and device.

#include <catch2/catch.hpp>

#include <string>
#include <tuple>

#include "runtime/zero/collective_choice.h"

using dsrt::zero::chooseFlatCollective;
using dsrt::zero::FlatCollective;
using dsrt::zero::flatCollectiveName;

TEST_CASE("chooseFlatCollective uses point-to-point on Gloo host memory and flat-base collectives on NCCL",
          "[runtime][zero]") {
  auto [backend, device, want] = GENERATE(table<std::string, c10::DeviceType, FlatCollective>({
      {"gloo", c10::DeviceType::CPU, FlatCollective::kPointToPoint},
      {"nccl", c10::DeviceType::CUDA, FlatCollective::kFlatBase},
      {"nccl", c10::DeviceType::CPU, FlatCollective::kList},
      {"gloo", c10::DeviceType::CUDA, FlatCollective::kList},
      {"mpi", c10::DeviceType::CPU, FlatCollective::kList},
      {"ucc", c10::DeviceType::CUDA, FlatCollective::kList},
      {"", c10::DeviceType::CPU, FlatCollective::kList},
  }));
  INFO("backend '" << backend << "' device " << c10::DeviceTypeName(device));
  CHECK(std::string(flatCollectiveName(chooseFlatCollective(backend, device))) == flatCollectiveName(want));
}

TEST_CASE("chooseBucketReduceScatter pads buckets for reduce_scatter_tensor on NCCL and keeps Gloo's alltoall",
          "[runtime][zero]") {
  using dsrt::zero::BucketReduceScatter;
  auto [backend, device, want] = GENERATE(table<std::string, c10::DeviceType, BucketReduceScatter>({
      {"nccl", c10::DeviceType::CUDA, BucketReduceScatter::kPaddedTensor},
      {"gloo", c10::DeviceType::CPU, BucketReduceScatter::kAlltoall},
      {"gloo", c10::DeviceType::CUDA, BucketReduceScatter::kAlltoall},
      {"nccl", c10::DeviceType::CPU, BucketReduceScatter::kAlltoall},
      {"mpi", c10::DeviceType::CPU, BucketReduceScatter::kAlltoall},
      {"", c10::DeviceType::CUDA, BucketReduceScatter::kAlltoall},
  }));
  INFO("backend '" << backend << "' device " << c10::DeviceTypeName(device));
  CHECK(std::string(dsrt::zero::bucketReduceScatterName(dsrt::zero::chooseBucketReduceScatter(backend, device))) ==
        dsrt::zero::bucketReduceScatterName(want));
}
