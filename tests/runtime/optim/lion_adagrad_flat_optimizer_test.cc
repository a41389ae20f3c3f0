// Lion and Adagrad as FlatOptimizers against their references: torch::optim::Adagrad (the same ATen
// operations, so bit for bit), DeepSpeed's DeepSpeedCPUAdagrad rule and DeepSpeed's Lion rule written out
// here element by element as their CPU kernels compute them (csrc/adagrad/cpu_adagrad.cpp and
// csrc/lion/cpu_lion_impl.cpp, Step_1). Two TEST_CASEs: each is a LibTorch process under CTest.

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <torch/optim/adagrad.h>

#include <cmath>
#include <vector>

#include "runtime/optim/flat_optimizer.h"

using dsrt::optim::OptimizerKind;
using dsrt::optim::OptimizerSpec;

namespace {

constexpr int kSteps = 5;

double lrAt(int step) { return 1e-2 / step; }

// Step 3's gradient has exact zeros, where Lion's sign step is decided by the momentum alone.
at::Tensor gradAt(int step, int64_t n) {
  at::manual_seed(2000 + step);
  at::Tensor g = at::randn({n});
  return step == 3 ? g * (at::rand({n}) > 0.5) : g;
}

// Parameters are O(1) and move by O(lr) per step: a few float ulps of them is "within rounding".
double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

// Gradients at least 0.5 in magnitude: with |wd * p| well below that, DeepSpeedCPUAdagrad's raw g over
// sqrt(sum of (g + wd*p)^2) stays well conditioned (where g + wd*p nearly cancels, float rounding of the
// sum is amplified without bound, whoever computes it).
at::Tensor boundedGradAt(int step, int64_t n) {
  const at::Tensor g = gradAt(step, n);
  return g.sign() * (g.abs() + 0.5);
}

using GradFn = at::Tensor (*)(int, int64_t);

at::Tensor flatRun(const at::Tensor& init, const OptimizerSpec& spec, GradFn grad = gradAt) {
  at::Tensor p = init.clone();
  auto opt = dsrt::optim::makeFlatOptimizer(spec, p.numel(), p.device());
  for (int t = 1; t <= kSteps; ++t) {
    opt->step(p, grad(t, p.numel()), lrAt(t));
  }
  CHECK(opt->stepCount() == kSteps);
  return p;
}

// DeepSpeed's Lion, one float at a time as Lion_Optimizer::Step_1 does it.
at::Tensor deepSpeedLion(const at::Tensor& init, const OptimizerSpec& spec) {
  at::Tensor p = init.clone();
  std::vector<float> m(static_cast<size_t>(p.numel()), 0.0f);
  const float b1 = static_cast<float>(spec.beta1);
  const float b2 = static_cast<float>(spec.beta2);
  for (int t = 1; t <= kSteps; ++t) {
    const at::Tensor g = gradAt(t, p.numel());
    const float lr = static_cast<float>(lrAt(t));
    const float afterDecay = 1.0f - lr * static_cast<float>(spec.weightDecay);
    float* pp = p.data_ptr<float>();
    const float* gp = g.data_ptr<float>();
    for (size_t k = 0; k < m.size(); ++k) {
      const float c = gp[k] * (1 - b1) + m[k] * b1;
      const float update = -std::copysign(lr, c);
      pp[k] = spec.weightDecay > 0 ? pp[k] * afterDecay + update : pp[k] + update;
      m[k] = gp[k] * (1 - b2) + m[k] * b2;
    }
  }
  return p;
}

// DeepSpeedCPUAdagrad: the decayed gradient feeds the sum, the raw one is divided.
at::Tensor deepSpeedCpuAdagrad(const at::Tensor& init, const OptimizerSpec& spec) {
  at::Tensor p = init.clone();
  std::vector<float> sum(static_cast<size_t>(p.numel()), 0.0f);
  for (int t = 1; t <= kSteps; ++t) {
    const at::Tensor g = boundedGradAt(t, p.numel());
    const float lr = static_cast<float>(lrAt(t));
    float* pp = p.data_ptr<float>();
    const float* gp = g.data_ptr<float>();
    for (size_t k = 0; k < sum.size(); ++k) {
      const float decayed = pp[k] * static_cast<float>(spec.weightDecay) + gp[k];
      sum[k] += decayed * decayed;
      pp[k] += gp[k] / (std::sqrt(sum[k]) + static_cast<float>(spec.eps)) * -lr;
    }
  }
  return p;
}

at::Tensor torchAdagrad(const at::Tensor& init, const torch::optim::AdagradOptions& options) {
  at::Tensor p = init.clone();
  torch::optim::Adagrad opt({p}, options);
  for (int t = 1; t <= kSteps; ++t) {
    p.mutable_grad() = gradAt(t, p.numel());
    static_cast<torch::optim::AdagradOptions&>(opt.param_groups()[0].options()).lr(lrAt(t));
    opt.step();
  }
  return p;
}

OptimizerSpec specOf(OptimizerKind kind) {
  OptimizerSpec spec;
  spec.kind = kind;
  if (kind == OptimizerKind::kLion) {
    spec.beta1 = 0.9;
    spec.beta2 = 0.99;
    spec.weightDecay = 0.5;
  } else {
    spec.eps = 1e-10;
    spec.weightDecay = 0.1;
    spec.lrDecay = 0.05;
    spec.initialAccumulatorValue = 0.1;
  }
  return spec;
}

}  // namespace

TEST_CASE("FlatOptimizer Lion and Adagrad follow DeepSpeed's and torch's rules on the CPU and device paths",
          "[runtime][optim]") {
  const int64_t n = 10007;
  at::manual_seed(11);
  const at::Tensor init = at::randn({n});

  for (bool deviceKernels : {false, true}) {
    INFO("deviceKernels " << deviceKernels);
    OptimizerSpec lion = specOf(OptimizerKind::kLion);
    lion.deviceKernels = deviceKernels;
    // Every element moves by exactly lr per step (plus decay): rounding aside, Lion is the reference.
    CHECK(maxAbsDiff(flatRun(init, lion), deepSpeedLion(init, lion)) < 1e-6);
    OptimizerSpec lionNoDecay = lion;
    lionNoDecay.weightDecay = 0.0;
    CHECK(maxAbsDiff(flatRun(init, lionNoDecay), deepSpeedLion(init, lionNoDecay)) < 1e-6);

    OptimizerSpec adagrad = specOf(OptimizerKind::kAdagrad);
    adagrad.deviceKernels = deviceKernels;
    const at::Tensor reference = torchAdagrad(init, torch::optim::AdagradOptions(0.0)
                                                        .eps(1e-10)
                                                        .weight_decay(0.1)
                                                        .lr_decay(0.05)
                                                        .initial_accumulator_value(0.1));
    CHECK(at::equal(flatRun(init, adagrad), reference));  // torch's own ATen operations, in its order

    OptimizerSpec cpuAdagrad = specOf(OptimizerKind::kAdagrad);
    cpuAdagrad.deviceKernels = deviceKernels;
    cpuAdagrad.lrDecay = 0.0;
    cpuAdagrad.initialAccumulatorValue = 0.0;
    cpuAdagrad.adagradRawGradStep = true;
    const at::Tensor small = init * 0.1;
    const at::Tensor rawStep = flatRun(small, cpuAdagrad, boundedGradAt);
    CHECK(maxAbsDiff(rawStep, deepSpeedCpuAdagrad(small, cpuAdagrad)) < 1e-6);
    cpuAdagrad.adagradRawGradStep = false;
    CHECK(maxAbsDiff(rawStep, flatRun(small, cpuAdagrad, boundedGradAt)) > 1e-4);  // the rules differ with decay
  }
}

TEST_CASE("FlatOptimizer Lion and Adagrad step in pieces bit-identically, reload their state and check it",
          "[runtime][optim]") {
  const int64_t n = 1000;
  at::manual_seed(5);
  const at::Tensor init = at::randn({n});

  for (OptimizerKind kind : {OptimizerKind::kLion, OptimizerKind::kAdagrad}) {
    const OptimizerSpec spec = specOf(kind);
    INFO("kind " << dsrt::optim::kindName(kind));

    // Pieces (on kPieceAlign boundaries) with a low-precision copy, against whole steps.
    at::Tensor whole = init.clone();
    at::Tensor pieced = init.clone();
    at::Tensor low = at::empty({n}, at::kBFloat16);
    auto a = dsrt::optim::makeFlatOptimizer(spec, n);
    auto b = dsrt::optim::makeFlatOptimizer(spec, n);
    for (int t = 1; t <= 3; ++t) {
      a->step(whole, gradAt(t, n), lrAt(t));
      std::vector<int64_t> done;
      b->stepInPieces(pieced, gradAt(t, n), lrAt(t), low, {128, 512, n}, [&](int64_t end) { done.push_back(end); });
      CHECK(done == std::vector<int64_t>{128, 512, n});
    }
    CHECK(b->stepCount() == 3);
    CHECK(at::equal(whole, pieced));
    CHECK(at::equal(low, pieced.to(at::kBFloat16)));

    // A reload continues exactly like the uninterrupted optimizer.
    const std::string name = kind == OptimizerKind::kLion ? "exp_avg" : "sum";
    REQUIRE(a->state().size() == 1);
    CHECK(a->state()[0].first == name);
    CHECK(a->stateBytes() == n * 4);
    auto c = dsrt::optim::makeFlatOptimizer(spec, n);
    c->loadState({{name, a->state()[0].second.clone()}}, a->stepCount());
    at::Tensor resumed = whole.clone();
    a->step(whole, gradAt(4, n), lrAt(4));
    c->step(resumed, gradAt(4, n), lrAt(4));
    CHECK(at::equal(whole, resumed));
    CHECK(c->stepCount() == 4);

    // Refused loads name what is wrong and leave the state alone.
    const at::Tensor before = c->state()[0].second.clone();
    CHECK_THROWS_WITH(c->loadState({{"exp_avg_sq", before}}, 1), Catch::Contains("unknown") &&
                                                                     Catch::Contains("state 'exp_avg_sq'"));
    CHECK_THROWS_WITH(c->loadState({{name, at::zeros({n + 1})}}, 1), Catch::Contains("must have 1000 elements"));
    CHECK_THROWS_WITH(c->loadState({}, 1), Catch::Contains("state needs " + name));
    CHECK_THROWS_WITH(c->loadState({{name, before}}, -1), Catch::Contains("step count must be >= 0"));
    CHECK(at::equal(c->state()[0].second, before));
  }

  OptimizerSpec bad = specOf(OptimizerKind::kAdagrad);
  bad.lrDecay = -1.0;
  CHECK_THROWS_WITH(dsrt::optim::makeFlatOptimizer(bad, 4), Catch::Contains("Adagrad lr_decay must be >= 0"));
  OptimizerSpec badLion = specOf(OptimizerKind::kLion);
  badLion.beta2 = 1.0;
  CHECK_THROWS_WITH(dsrt::optim::makeFlatOptimizer(badLion, 4), Catch::Contains("betas[1] must be in [0, 1)"));
}
