// backendDeviceRefusal from a table: Gloo with device tensors is refused with the backend, the device
// and the remedy in one line; every other pair trains.

#include <catch2/catch.hpp>

#include <string>

#include "runtime/backend_device_check.h"

using dsrt::backendDeviceRefusal;

TEST_CASE("backendDeviceRefusal lets Gloo on the CPU and NCCL on CUDA through", "[runtime][core]") {
  auto [backend, device] = GENERATE(table<std::string, std::string>({
      {"gloo", "cpu"},
      {"nccl", "cuda:0"},
      {"nccl", "cuda:7"},
      {"mpi", "cpu"},
  }));
  INFO(backend << " on " << device);
  CHECK_FALSE(backendDeviceRefusal(backend, c10::Device(device)).has_value());
}

TEST_CASE("backendDeviceRefusal refuses Gloo with device tensors, naming backend, device and remedy",
          "[runtime][core]") {
  auto device = GENERATE(as<std::string>{}, "cuda:0", "cuda:3", "meta");
  const auto refusal = backendDeviceRefusal("gloo", c10::Device(device));
  REQUIRE(refusal.has_value());
  CHECK_THAT(*refusal, Catch::Contains("'gloo'") && Catch::Contains("'" + device + "'") &&
                           Catch::Contains("nccl") && Catch::Contains("keep the model on the CPU"));
  CHECK(refusal->find('\n') == std::string::npos);
}
