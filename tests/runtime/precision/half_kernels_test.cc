// The float16 capability probe (runtime/precision/half_kernels.h): its answer is torch's own, and the
// refusal it builds names the config, torch's error and the remedy.
#include <ATen/ATen.h>

#include <optional>
#include <string>

// After the torch headers: Catch's CHECK must replace glog's.
#include <catch2/catch.hpp>

#include "runtime/precision/half_kernels.h"

using Catch::Matchers::Contains;
using namespace dsrt::precision;

// One TEST_CASE with sections: each case is a process, and LibTorch costs about a second to start.
TEST_CASE("the float16 probe answers as torch does, and its messages name the remedy", "[runtime][precision]") {
  SECTION("missingHalfMatmul says what torch's own float16 addmm says on the CPU") {
    std::optional<std::string> torchSays;
    try {
      const at::Tensor one = at::ones({2, 2}, at::kHalf);
      at::addmm(one, one, one);
    } catch (const c10::Error& e) {
      torchSays = e.what_without_backtrace();
    }
    const std::optional<std::string> probe = missingHalfMatmul(c10::Device(c10::kCPU));
    CHECK(probe.has_value() == torchSays.has_value());
    if (probe) {
      CHECK_THAT(*torchSays, Contains(*probe));
      CHECK(probe->find('\n') == std::string::npos);
    }
    CHECK(missingHalfMatmul(c10::Device(c10::kCPU)) == probe);  // remembered
  }
  SECTION("missingHalfKernelLine finds torch's line in C++ and Python error texts") {
    CHECK(missingHalfKernelLine("\"addmm_impl_cpu_\" not implemented for 'Half'\nException raised from ...") ==
          std::string("\"addmm_impl_cpu_\" not implemented for 'Half'"));
    CHECK(missingHalfKernelLine("Traceback\nRuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'\n") ==
          std::string("\"addmm_impl_cpu_\" not implemented for 'Half'"));
    CHECK_FALSE(missingHalfKernelLine("shape mismatch: 2x3 and 4x5").has_value());
  }
  SECTION("fp16Refusal names the config, torch's error and bf16 as the remedy") {
    const std::string r = fp16Refusal("ds.json", c10::Device(c10::kCPU), "\"mm\" not implemented for 'Half'");
    CHECK(r == "ds.json: fp16.enabled: this torch has no float16 kernels for the model on cpu (\"mm\" not "
               "implemented for 'Half'), got 'true'\n  hint: use \"bf16\": {\"enabled\": true} instead of fp16 on "
               "this machine, or train on a GPU");
  }
}
