// The device optimizer (the GPU path's Adam/AdamW/SGD: ATen kernels over flat runs) on CPU tensors,
// against the vectorised CPU Adam, which flat_optimizer_test.cc holds to torch::optim bit for bit.
// Contract: within fp32 rounding (allclose rtol 1e-5, atol 1e-6 after kSteps steps with lr ~1e-2; a
// wrong rule moves values by ~1e-3), not bit-identical: the fused kernel and the tensor ops round in a
// different order from torch's single-tensor loop.

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <memory>
#include <tuple>
#include <vector>

#include "runtime/compat/fused_adam_compat.h"
#include "runtime/optim/adam_flat_optimizer.h"
#include "runtime/optim/device_adam_flat_optimizer.h"
#include "runtime/optim/flat_optimizer.h"
#include "runtime/optim/sgd_flat_optimizer.h"

using dsrt::optim::DeviceAdamFlatOptimizer;
using dsrt::optim::FlatOptimizer;
using dsrt::optim::OptimizerKind;
using dsrt::optim::OptimizerSpec;

namespace {

constexpr int kSteps = 6;
const c10::Device kCpu(c10::kCPU);

double lrAt(int step) { return 1e-2 / step; }

at::Tensor gradAt(int step, int64_t n) {
  at::manual_seed(2000 + step);
  return at::randn({n}) * (step == 3 ? 1e-4 : 1.0);
}

bool withinRounding(const at::Tensor& a, const at::Tensor& b) { return at::allclose(a, b, 1e-5, 1e-6); }

double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

// Steps `opt` kSteps times over a copy of init, with param groups 0 | 1 | 0 when `grouped`.
at::Tensor run(FlatOptimizer& opt, const at::Tensor& init, bool grouped) {
  if (grouped) {
    dsrt::optim::GroupSettings decay;
    decay.weightDecay = 0.1;
    dsrt::optim::GroupSettings other;
    other.weightDecay = 0.0;
    other.lr = 3e-3;
    other.beta1 = 0.8;
    other.beta2 = 0.95;
    opt.setGroupRuns({{1000, 0}, {2500, 1}, {init.numel(), 0}});
    opt.setGroupSettings({decay, other});
  }
  at::Tensor p = init.clone();
  for (int t = 1; t <= kSteps; ++t) {
    opt.step(p, gradAt(t, p.numel()), lrAt(t));
  }
  return p;
}

// The rules a DeepSpeed config can ask for: Adam (L2), AdamW, Adam with adam_w_mode, no bias correction.
std::vector<std::tuple<const char*, OptimizerSpec>> adamRules() {
  OptimizerSpec adam;
  adam.kind = OptimizerKind::kAdam;
  adam.weightDecay = 0.05;
  adam.beta1 = 0.85;
  adam.eps = 1e-6;
  OptimizerSpec adamw = adam;
  adamw.kind = OptimizerKind::kAdamW;
  OptimizerSpec wMode = adam;
  wMode.adamWMode = true;
  OptimizerSpec noBias = adamw;
  noBias.biasCorrection = false;
  return {{"adam l2", adam}, {"adamw", adamw}, {"adam adam_w_mode", wMode}, {"adamw no bias correction", noBias}};
}

void requireMatchesCpuAdam(bool useFused) {
  at::manual_seed(11);
  const at::Tensor init = at::randn({4099});
  for (const auto& [name, spec] : adamRules()) {
    for (bool grouped : {false, true}) {
      dsrt::optim::AdamFlatOptimizer reference(spec, init.numel());
      DeviceAdamFlatOptimizer device(spec, init.numel(), kCpu, useFused);
      const at::Tensor want = run(reference, init, grouped);
      const at::Tensor got = run(device, init, grouped);
      INFO(name << (grouped ? " with groups" : "") << ": max |difference| " << maxAbsDiff(got, want));
      CHECK(withinRounding(got, want));
      CHECK(withinRounding(device.state()[0].second, reference.state()[0].second));
      CHECK(withinRounding(device.state()[1].second, reference.state()[1].second));
      CHECK(device.stepCount() == kSteps);
      CHECK_FALSE(at::equal(got, init));
    }
  }
}

}  // namespace

TEST_CASE("DeviceAdamFlatOptimizer's tensor-op path follows the CPU Adam for every Adam rule", "[runtime][optim]") {
  requireMatchesCpuAdam(/*useFused=*/false);
}

TEST_CASE("DeviceAdamFlatOptimizer's fused ATen kernel follows the CPU Adam for every Adam rule", "[runtime][optim]") {
  if (!dsrt::compat::hasFusedAdam(c10::DeviceType::CPU)) {
    WARN("SKIPPED: this LibTorch has no CPU kernel for at::_fused_adam_/_fused_adamw_ (needs torch >= 2.4); "
         "the fused path is checked only on torch >= 2.4 or a GPU");
    return;
  }
  requireMatchesCpuAdam(/*useFused=*/true);
}

TEST_CASE("makeFlatOptimizer picks the device optimizer for deviceKernels or a non-CPU device", "[runtime][optim]") {
  OptimizerSpec spec;
  auto cpu = dsrt::optim::makeFlatOptimizer(spec, 10, kCpu);
  CHECK(dynamic_cast<dsrt::optim::AdamFlatOptimizer*>(cpu.get()) != nullptr);
  spec.deviceKernels = true;
  auto forced = dsrt::optim::makeFlatOptimizer(spec, 10, kCpu);
  auto* device = dynamic_cast<DeviceAdamFlatOptimizer*>(forced.get());
  REQUIRE(device != nullptr);
  CHECK(device->usesFusedKernel() == dsrt::compat::hasFusedAdam(c10::DeviceType::CPU));
  // The meta device has no kernels to run but shows where state goes and which device operands need.
  const c10::Device meta(c10::kMeta);
  spec.deviceKernels = false;
  auto onMeta = dsrt::optim::makeFlatOptimizer(spec, 10, meta);
  CHECK(onMeta->device() == meta);
  CHECK(onMeta->state()[0].second.device() == meta);
  CHECK_THROWS_WITH(onMeta->step(at::zeros({10}), at::zeros({10}), 0.1),
                    Catch::Contains("optimizer: params must be on meta, got 'cpu'"));
  spec.kind = OptimizerKind::kSgd;
  spec.momentum = 0.9;
  auto sgd = dsrt::optim::makeFlatOptimizer(spec, 10, meta);
  CHECK(dynamic_cast<dsrt::optim::SgdFlatOptimizer*>(sgd.get()) != nullptr);
  CHECK(sgd->state()[0].second.device() == meta);
}

TEST_CASE("DeviceAdamFlatOptimizer copies low precision, reloads state and SGD on the device path is the same rule",
          "[runtime][optim]") {
  at::manual_seed(5);
  const at::Tensor init = at::randn({777});
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kAdamW;
  spec.weightDecay = 0.01;
  spec.deviceKernels = true;

  SECTION("stepAndCopy writes the stepped params rounded to bf16") {
    auto opt = dsrt::optim::makeFlatOptimizer(spec, init.numel(), kCpu);
    at::Tensor p = init.clone();
    at::Tensor low = at::zeros({init.numel()}, at::kBFloat16);
    opt->stepAndCopy(p, gradAt(1, p.numel()), 0.1, low);
    CHECK(at::equal(low, p.to(at::kBFloat16)));
    CHECK_FALSE(at::equal(p, init));
  }

  SECTION("a reloaded optimizer continues exactly where the saved one was") {
    auto first = dsrt::optim::makeFlatOptimizer(spec, init.numel(), kCpu);
    at::Tensor p = init.clone();
    first->step(p, gradAt(1, p.numel()), 0.1);
    auto second = dsrt::optim::makeFlatOptimizer(spec, init.numel(), kCpu);
    second->loadState(first->state(), first->stepCount());
    at::Tensor q = p.clone();
    first->step(p, gradAt(2, p.numel()), 0.05);
    second->step(q, gradAt(2, q.numel()), 0.05);
    CHECK(at::equal(p, q));
  }

  SECTION("SGD with momentum through the device factory equals the CPU SGD bit for bit") {
    OptimizerSpec sgd;
    sgd.kind = OptimizerKind::kSgd;
    sgd.momentum = 0.9;
    sgd.weightDecay = 0.01;
    auto cpu = dsrt::optim::makeFlatOptimizer(sgd, init.numel());
    sgd.deviceKernels = true;
    auto device = dsrt::optim::makeFlatOptimizer(sgd, init.numel(), kCpu);
    CHECK(at::equal(run(*device, init, false), run(*cpu, init, false)));
  }
}
