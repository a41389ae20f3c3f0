// The scalar reference: torch.optim.Adam/AdamW's per-element expression, one operation at a time, in the
// order and with the roundings of torch 1.13's vectorised CPU kernels, found by reproducing torch's
// results bit for bit: add_(x, alpha) is fma(x, alpha, self); addcmul_ is fma(value * t1, t2, self) (GCC
// contracted it in torch's build); mul_, sqrt, the division by sqrt(bc2) and addcdiv's
// self + (value * t1) / t2 are separately rounded. Built with -ffp-contract=off so the compiler cannot
// fuse anything else, which is what lets the SIMD variants be checked against it bit for bit.

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>

#include "runtime/optim/cpu_adam.h"

namespace dsrt::optim::detail {

uint16_t floatToHalfBits(float f) { return c10::detail::fp16_ieee_from_fp32_value(f); }

uint16_t floatToBf16Bits(float f) { return c10::detail::round_to_nearest_even(f); }

void adamRangeScalar(const AdamBuffers& b, const AdamConstants& c, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    float p = b.params[i];
    float g = b.grads[i];
    if (c.hasDecay) {
      p = p * c.decay;
    }
    if (c.hasL2) {
      g = std::fma(p, c.l2, g);
    }
    const float m = std::fma(g, c.oneMinusBeta1, b.expAvg[i] * c.beta1);
    const float v = std::fma(c.oneMinusBeta2 * g, g, b.expAvgSq[i] * c.beta2);
    float denom = std::sqrt(v);
    if (c.divideBc2) {
      denom = denom / c.bc2Sqrt;
    }
    denom = denom + c.eps;
    p = p + (c.negStepSize * m) / denom;
    b.params[i] = p;
    b.expAvg[i] = m;
    b.expAvgSq[i] = v;
    if (b.lowKind == LowPrecisionKind::kFp16) {
      b.lowOut[i] = floatToHalfBits(p);
    } else if (b.lowKind == LowPrecisionKind::kBf16) {
      b.lowOut[i] = floatToBf16Bits(p);
    }
  }
}

}  // namespace dsrt::optim::detail
