#include "runtime/optim/cpu_adam.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace dsrt::optim {
namespace {

// Chunks start on 64-element (256-byte) boundaries so every thread but the last runs whole vectors and
// no two threads write the same cache line.
constexpr int64_t kChunkAlign = 64;
// Below this many elements per thread, starting a thread costs more than it saves (~20 us per thread
// vs ~1 ns per element).
constexpr int64_t kMinPerThread = 1 << 15;

using RangeFn = void (*)(const AdamBuffers&, const AdamConstants&, int64_t, int64_t);

RangeFn rangeFn(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512:
      return detail::adamRangeAvx512;
    case CpuIsa::kAvx2:
      return detail::adamRangeAvx2;
    case CpuIsa::kScalar:
      break;
  }
  return detail::adamRangeScalar;
}

CpuIsa detectBest() {
  CpuIsa best = CpuIsa::kScalar;
  if (cpuIsaSupported(CpuIsa::kAvx512)) {
    best = CpuIsa::kAvx512;
  } else if (cpuIsaSupported(CpuIsa::kAvx2)) {
    best = CpuIsa::kAvx2;
  }
  const char* cap = std::getenv("DSRT_CPU_ADAM_ISA");
  if (cap == nullptr || *cap == '\0') {
    return best;
  }
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (std::strcmp(cap, cpuIsaName(isa)) == 0) {
      return cpuIsaSupported(isa) ? isa : best;
    }
  }
  TORCH_CHECK(false, "DSRT_CPU_ADAM_ISA: expected one of scalar, avx2, avx512, got '", cap, "'");
  return best;
}

}  // namespace

AdamConstants adamConstants(const AdamHyper& h) {
  TORCH_CHECK(h.step >= 1, "cpu adam: step must be >= 1, got '", h.step, "'");
  AdamConstants c{};
  // Python/C++ torch compute these in double and its kernels round each scalar to float once.
  c.beta1 = static_cast<float>(h.beta1);
  c.oneMinusBeta1 = static_cast<float>(1.0 - h.beta1);
  c.beta2 = static_cast<float>(h.beta2);
  c.oneMinusBeta2 = static_cast<float>(1.0 - h.beta2);
  c.eps = static_cast<float>(h.eps);
  double bc1 = 1.0;
  double bc2 = 1.0;
  if (h.biasCorrection) {
    bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
    bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
  }
  c.bc2Sqrt = static_cast<float>(std::sqrt(bc2));
  c.divideBc2 = h.biasCorrection;
  c.negStepSize = static_cast<float>(-(h.lr / bc1));
  c.hasL2 = !h.decoupled && h.weightDecay != 0.0;
  c.l2 = c.hasL2 ? static_cast<float>(h.weightDecay) : 0.0f;
  c.hasDecay = h.decoupled && h.weightDecay != 0.0;
  c.decay = c.hasDecay ? static_cast<float>(1.0 - h.lr * h.weightDecay) : 1.0f;
  return c;
}

bool cpuIsaSupported(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case CpuIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case CpuIsa::kScalar:
      return true;
  }
  return false;
}

const char* cpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kScalar:
      break;
  }
  return "scalar";
}

CpuIsa bestCpuIsa() {
  static const CpuIsa best = detectBest();
  return best;
}

void cpuAdamStep(const AdamBuffers& b, const AdamHyper& hyper, int numThreads, CpuIsa isa) {
  TORCH_CHECK(cpuIsaSupported(isa), "cpu adam: this CPU cannot run the '", cpuIsaName(isa), "' variant");
  TORCH_CHECK(b.numel >= 0, "cpu adam: numel must be >= 0, got '", b.numel, "'");
  if (b.numel == 0) {
    return;
  }
  TORCH_CHECK(b.params && b.grads && b.expAvg && b.expAvgSq, "cpu adam: null buffer for ", b.numel, " elements");
  TORCH_CHECK(b.lowKind == LowPrecisionKind::kNone || b.lowOut != nullptr,
              "cpu adam: a low-precision copy was requested without an output buffer");
  const AdamConstants c = adamConstants(hyper);
  const RangeFn fn = rangeFn(isa);
  if (numThreads <= 0) {
    numThreads = at::get_num_threads();
  }
  const int64_t useful = std::max<int64_t>(1, b.numel / kMinPerThread);
  const int64_t threads = std::min<int64_t>(numThreads, useful);
  if (threads <= 1) {
    fn(b, c, 0, b.numel);
    return;
  }
  int64_t chunk = (b.numel + threads - 1) / threads;
  chunk = (chunk + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  for (int64_t t = 1; t < threads; ++t) {
    const int64_t begin = std::min(b.numel, t * chunk);
    const int64_t end = std::min(b.numel, begin + chunk);
    if (begin < end) {
      workers.emplace_back([&b, &c, fn, begin, end] { fn(b, c, begin, end); });
    }
  }
  fn(b, c, 0, std::min(b.numel, chunk));
  for (auto& w : workers) {
    w.join();
  }
}

void cpuAdamStep(const AdamBuffers& buffers, const AdamHyper& hyper, int numThreads) {
  cpuAdamStep(buffers, hyper, numThreads, bestCpuIsa());
}

}  // namespace dsrt::optim
