// CPU Adam throughput on one flat fp32 buffer: dsrt's kernel against torch::optim::Adam and against a
// streaming kernel with Adam's exact memory traffic (read p, g, m, v; write p, m, v: 28 bytes/param)
// and trivial arithmetic, all with the same thread count in the same run.
// usage: bench_cpu_adam [--params N] [--threads T] [--reps R]
// The last line reads: params_per_s dsrt=<x> torch=<y> bound=<z>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench_optimizer_common.h"
#include "runtime/optim/cpu_adam.h"

const char* dsrun::bench::benchName() { return "bench_cpu_adam"; }

namespace {

using dsrun::bench::Options;
using dsrun::bench::Timing;
using dsrun::bench::bestTimes;

// The bound: Adam's loads and stores, one multiply-add each. Cloned per ISA so the bound is not held back
// by SSE2 code generation. In-place stores into just-read lines cost no extra traffic, which is why a
// STREAM triad figure would understate what Adam can reach.
__attribute__((target_clones("avx512f", "avx2", "default"))) void boundRange(float* p, const float* g, float* m,
                                                                              float* v, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float gi = g[i];
    m[i] = m[i] * 0.9f + gi;
    v[i] = v[i] * 0.9f + gi;
    p[i] = p[i] * 0.9f + gi;
  }
}

// Same chunking as cpuAdamStep: contiguous 64-element-aligned ranges, one per thread.
void parallelChunks(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn) {
  int64_t chunk = (n + threads - 1) / threads;
  chunk = (chunk + 63) / 64 * 64;
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) {
    const int64_t begin = std::min(n, t * chunk);
    const int64_t end = std::min(n, begin + chunk);
    workers.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  fn(0, std::min(n, chunk));
  for (auto& w : workers) {
    w.join();
  }
}

void printRow(const char* what, const Timing& t, int64_t n, int threads) {
  std::printf("%-20s %8.4f s/step  %8.1f M params/s  (%.1f GB/s at 28 B/param; by CPU time %.1f M params/s)\n",
              what, t.wall, n / t.wall / 1e6, 28.0 * n / t.wall / 1e9, n / (t.cpu / threads) / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = dsrun::bench::parse(argc, argv, 100'000'000);
  at::set_num_threads(o.threads);
  const int64_t n = o.params;
  const dsrt::optim::CpuIsa isa = dsrt::optim::bestCpuIsa();
  std::printf("bench_cpu_adam: %lld params, %d thread(s), isa %s, best of %d after a warm-up\n",
              static_cast<long long>(n), o.threads, dsrt::optim::cpuIsaName(isa), o.reps);

  at::manual_seed(0);
  at::Tensor params = at::randn({n});
  at::Tensor grads = at::randn({n}) * 1e-2;
  at::Tensor expAvg = at::zeros({n});
  at::Tensor expAvgSq = at::zeros({n});
  dsrt::optim::AdamBuffers buffers;
  buffers.params = params.data_ptr<float>();
  buffers.grads = grads.data_ptr<float>();
  buffers.expAvg = expAvg.data_ptr<float>();
  buffers.expAvgSq = expAvgSq.data_ptr<float>();
  buffers.numel = n;
  dsrt::optim::AdamHyper hyper;
  hyper.lr = 1e-3;
  hyper.weightDecay = 0.01;
  hyper.decoupled = true;
  const std::vector<Timing> best = bestTimes(
      o.reps, {[&] {
                 dsrt::optim::cpuAdamStep(buffers, hyper, o.threads, isa);
                 ++hyper.step;
               },
               [&] {
                 parallelChunks(n, o.threads, [&](int64_t begin, int64_t end) {
                   boundRange(buffers.params, buffers.grads, buffers.expAvg, buffers.expAvgSq, begin, end);
                 });
               }});
  const double dsrtS = best[0].wall;
  const double boundS = best[1].wall;
  printRow("dsrt cpu adam", best[0], n, o.threads);
  printRow("bound stream", best[1], n, o.threads);

  // torch keeps its own exp_avg/exp_avg_sq; dsrt's state is released first so peak memory stays at ~5 n floats.
  expAvg = at::Tensor();
  expAvgSq = at::Tensor();
  params.mutable_grad() = grads;
  torch::optim::Adam adam({params}, torch::optim::AdamOptions(1e-3).weight_decay(0.01));
  const Timing torchT = bestTimes(o.reps, {[&] { adam.step(); }})[0];
  const double torchS = torchT.wall;
  printRow("torch optim::Adam", torchT, n, o.threads);

  const double dsrtRate = n / dsrtS;
  const double torchRate = n / torchS;
  const double boundRate = n / boundS;
  std::printf("ratio dsrt/torch=%.2f dsrt/bound=%.3f (by CPU time: dsrt/torch=%.2f dsrt/bound=%.3f)\n",
              dsrtRate / torchRate, dsrtRate / boundRate, torchT.cpu / best[0].cpu, best[1].cpu / best[0].cpu);
  std::printf("params_per_s dsrt=%.4g torch=%.4g bound=%.4g\n", dsrtRate, torchRate, boundRate);
  return 0;
}
