// Lion and Adagrad on one flat fp32 buffer: dsrt's FlatOptimizers (what the engine steps over a ZeRO partition,
// ATen element-wise ops) against what a torch user runs for the same rule: torch::optim::Adagrad, and Lion in
// torch ops as lion-pytorch writes it (torch has no Lion). Same threads, interleaved, in the same run.
// usage: bench_flat_optimizers [--params N] [--threads T] [--reps R]
// The last line reads: ratios adagrad dsrt/torch=<x> lion dsrt/torch=<y> (throughput ratios)

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/optim/adagrad.h>

#include <cstdio>
#include <memory>

#include "bench_optimizer_common.h"
#include "runtime/optim/flat_optimizer.h"

const char* dsrun::bench::benchName() { return "bench_flat_optimizers"; }

namespace {

using dsrun::bench::Timing;

constexpr double kLr = 1e-3;
constexpr double kWeightDecay = 0.01;
constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.99;

void printRow(const char* what, const Timing& t, int64_t n, int threads) {
  std::printf("%-24s %8.4f s/step  %8.1f M params/s  (by CPU time %.1f M params/s)\n", what, t.wall,
              n / t.wall / 1e6, n / (t.cpu / threads) / 1e6);
}

// One Lion step in torch ops, decoupled decay, as lion-pytorch's update_fn.
void torchLionStep(at::Tensor& p, const at::Tensor& g, at::Tensor& m) {
  p.mul_(1.0 - kLr * kWeightDecay);
  at::Tensor update = m.mul(kBeta1).add_(g, 1.0 - kBeta1);
  p.add_(update.sign_(), -kLr);
  m.lerp_(g, 1.0 - kBeta2);
}

}  // namespace

int main(int argc, char** argv) {
  const dsrun::bench::Options o = dsrun::bench::parse(argc, argv, 20'000'000);
  at::set_num_threads(o.threads);
  const int64_t n = o.params;
  std::printf("bench_flat_optimizers: %lld params, %d thread(s), best of %d after a warm-up\n",
              static_cast<long long>(n), o.threads, o.reps);
  at::manual_seed(0);
  at::Tensor grads = at::randn({n}) * 1e-2;

  dsrt::optim::OptimizerSpec adagradSpec;
  adagradSpec.kind = dsrt::optim::OptimizerKind::kAdagrad;
  adagradSpec.eps = 1e-10;
  adagradSpec.weightDecay = kWeightDecay;
  adagradSpec.numThreads = o.threads;
  dsrt::optim::OptimizerSpec lionSpec;
  lionSpec.kind = dsrt::optim::OptimizerKind::kLion;
  lionSpec.beta1 = kBeta1;
  lionSpec.beta2 = kBeta2;
  lionSpec.weightDecay = kWeightDecay;
  lionSpec.numThreads = o.threads;

  at::Tensor adagradParams = at::randn({n});
  at::Tensor torchAdagradParams = adagradParams.clone();
  torchAdagradParams.mutable_grad() = grads;
  at::Tensor lionParams = at::randn({n});
  at::Tensor torchLionParams = lionParams.clone();
  at::Tensor torchLionMomentum = at::zeros({n});
  auto dsrtAdagrad = dsrt::optim::makeFlatOptimizer(adagradSpec, n);
  auto dsrtLion = dsrt::optim::makeFlatOptimizer(lionSpec, n);
  torch::optim::Adagrad torchAdagrad({torchAdagradParams},
                                     torch::optim::AdagradOptions(kLr).weight_decay(kWeightDecay).eps(1e-10));

  const std::vector<Timing> best = dsrun::bench::bestTimes(
      o.reps, {[&] { dsrtAdagrad->step(adagradParams, grads, kLr); }, [&] { torchAdagrad.step(); },
               [&] { dsrtLion->step(lionParams, grads, kLr); },
               [&] { torchLionStep(torchLionParams, grads, torchLionMomentum); }});
  printRow("dsrt Adagrad", best[0], n, o.threads);
  printRow("torch optim::Adagrad", best[1], n, o.threads);
  printRow("dsrt Lion", best[2], n, o.threads);
  printRow("torch-ops Lion", best[3], n, o.threads);
  std::printf("ratios adagrad dsrt/torch=%.2f lion dsrt/torch=%.2f (throughput; by CPU time %.2f and %.2f)\n",
              best[1].wall / best[0].wall, best[3].wall / best[2].wall, best[1].cpu / best[0].cpu,
              best[3].cpu / best[2].cpu);
  return 0;
}
