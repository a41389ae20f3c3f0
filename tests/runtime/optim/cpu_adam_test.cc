// Every SIMD variant of the CPU Adam kernel against the scalar reference, bit for bit: the variants
// evaluate the same expression with the same roundings (-ffp-contract=off, explicit FMAs), so any
// difference is a bug, not rounding noise.

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/optim/cpu_adam.h"

using dsrt::optim::AdamBuffers;
using dsrt::optim::AdamHyper;
using dsrt::optim::CpuIsa;
using dsrt::optim::LowPrecisionKind;

namespace {

struct AdamState {
  std::vector<float> params, grads, expAvg, expAvgSq;
  std::vector<uint16_t> low;

  AdamState(int64_t n, uint32_t seed) : params(n), grads(n), expAvg(n), expAvgSq(n), low(n, 0) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i) {
      params[i] = normal(gen);
    }
  }

  void newGrads(uint32_t seed, float scale) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    for (auto& g : grads) {
      g = normal(gen);
    }
  }

  AdamBuffers buffers(LowPrecisionKind kind) {
    AdamBuffers b;
    b.params = params.data();
    b.grads = grads.data();
    b.expAvg = expAvg.data();
    b.expAvgSq = expAvgSq.data();
    b.lowOut = low.data();
    b.lowKind = kind;
    b.numel = static_cast<int64_t>(params.size());
    return b;
  }
};

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs `steps` updates of `isa` with `threads` threads on a fresh state and returns it.
AdamState runSteps(CpuIsa isa, int threads, int64_t n, const AdamHyper& base, LowPrecisionKind kind, int steps) {
  AdamState s(n, 1234);
  for (int t = 1; t <= steps; ++t) {
    // Gradient scales change per step so m and v see both small and large values.
    s.newGrads(100 + t, t == 2 ? 1e-3f : 1.0f);
    AdamHyper h = base;
    h.step = t;
    h.lr = base.lr * t;
    dsrt::optim::cpuAdamStep(s.buffers(kind), h, threads, isa);
  }
  return s;
}

}  // namespace

TEST_CASE("every cpu adam variant matches the scalar reference bit for bit", "[runtime][optim]") {
  const auto n = GENERATE(as<int64_t>{}, 1, 7, 8, 15, 16, 17, 31, 33, 100003);
  const auto [decay, decoupled, biasCorrection] =
      GENERATE(table<double, bool, bool>({{0.0, false, true}, {0.01, false, true}, {0.1, true, true},
                                          {0.0, true, false}, {0.05, false, false}}));
  const auto kind = GENERATE(LowPrecisionKind::kNone, LowPrecisionKind::kFp16, LowPrecisionKind::kBf16);
  AdamHyper h;
  h.lr = 1e-2;
  h.beta1 = 0.85;
  h.beta2 = 0.995;
  h.eps = 1e-6;
  h.weightDecay = decay;
  h.decoupled = decoupled;
  h.biasCorrection = biasCorrection;
  const AdamState ref = runSteps(CpuIsa::kScalar, 1, n, h, kind, 3);
  const AdamState start(n, 1234);
  REQUIRE_FALSE(sameBits(ref.params, start.params));
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!dsrt::optim::cpuIsaSupported(isa)) {
      WARN("SKIPPED: this CPU cannot run the " << dsrt::optim::cpuIsaName(isa) << " cpu adam variant");
      continue;
    }
    for (int threads : {1, 3}) {
      INFO("isa " << dsrt::optim::cpuIsaName(isa) << " threads " << threads << " n " << n);
      const AdamState got = runSteps(isa, threads, n, h, kind, 3);
      CHECK(sameBits(got.params, ref.params));
      CHECK(sameBits(got.expAvg, ref.expAvg));
      CHECK(sameBits(got.expAvgSq, ref.expAvgSq));
      CHECK(got.low == ref.low);
    }
  }
}

TEST_CASE("cpu adam's scalar reference follows the Adam formula and its conversions round to nearest even",
          "[runtime][optim]") {
  // One element, one step, by hand in double: m = (1-b1) g, v = (1-b2) g^2, and with bias correction
  // the update is lr * g / (|g| + eps') = lr * sign(g) up to eps.
  AdamState s(1, 7);
  s.params[0] = 0.5f;
  s.grads[0] = -2.0f;
  AdamHyper h;
  h.lr = 0.1;
  h.eps = 0.0;
  dsrt::optim::cpuAdamStep(s.buffers(LowPrecisionKind::kNone), h, 1, CpuIsa::kScalar);
  CHECK(s.params[0] == Approx(0.6).epsilon(1e-6));
  CHECK(s.expAvg[0] == Approx(-0.2).epsilon(1e-6));
  CHECK(s.expAvgSq[0] == Approx(0.004).epsilon(1e-6));

  using dsrt::optim::detail::floatToBf16Bits;
  using dsrt::optim::detail::floatToHalfBits;
  CHECK(floatToHalfBits(1.0f) == 0x3C00);
  CHECK(floatToHalfBits(65520.0f) == 0x7C00);  // rounds up to inf
  CHECK(floatToBf16Bits(1.0f) == 0x3F80);
  uint32_t tieEven = 0x3F808000;  // exactly halfway between 0x3F80 and 0x3F81: stays even
  uint32_t tieOdd = 0x3F818000;   // halfway between 0x3F81 and 0x3F82: rounds to even 0x3F82
  float f;
  std::memcpy(&f, &tieEven, 4);
  CHECK(floatToBf16Bits(f) == 0x3F80);
  std::memcpy(&f, &tieOdd, 4);
  CHECK(floatToBf16Bits(f) == 0x3F82);
}

TEST_CASE("cpu adam rejects a zero step, unsupported variants and missing buffers", "[runtime][optim]") {
  AdamState s(4, 1);
  AdamHyper h;
  h.step = 0;
  REQUIRE_THROWS_WITH(dsrt::optim::cpuAdamStep(s.buffers(LowPrecisionKind::kNone), h, 1, CpuIsa::kScalar),
                      Catch::Contains("step must be >= 1, got '0'"));
  h.step = 1;
  AdamBuffers b = s.buffers(LowPrecisionKind::kFp16);
  b.lowOut = nullptr;
  REQUIRE_THROWS_WITH(dsrt::optim::cpuAdamStep(b, h, 1, CpuIsa::kScalar),
                      Catch::Contains("without an output buffer"));
  CHECK(std::string(dsrt::optim::cpuIsaName(dsrt::optim::bestCpuIsa())) != "");
}
