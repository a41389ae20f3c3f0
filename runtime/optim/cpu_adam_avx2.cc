// AVX2+FMA variant (compiled with -mavx2 -mfma -mf16c -ffp-contract=off). Same expression, operation for
// operation, as cpu_adam_scalar.cc; the tail runs the same vector code on masked loads and stores, so
// sizes need not be multiples of 8.

#include <immintrin.h>

#include "runtime/optim/cpu_adam.h"

namespace dsrt::optim::detail {
namespace {

struct Consts {
  __m256 beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, bc2Sqrt, negStepSize, l2, decay;
};

// fp32 -> bf16 bits, round to nearest even, NaN -> 0x7FC0: c10::BFloat16's rule, 8 lanes at a time.
inline __m128i toBf16(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i bias = _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), nan);
  // packus works per 128-bit lane: [r0-3 r0-3 | r4-7 r4-7]; picking quadwords 0 and 2 orders them.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  return _mm256_castsi256_si128(packed);
}

inline void storeLow(uint16_t* out, __m128i low, int lanes) {
  if (lanes == 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), low);
    return;
  }
  alignas(16) uint16_t tmp[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(tmp), low);
  for (int j = 0; j < lanes; ++j) {
    out[j] = tmp[j];
  }
}

template <bool kDecay, bool kL2, bool kDivBc2>
inline void update(const AdamBuffers& b, const Consts& c, int64_t i, __m256i mask, int lanes) {
  __m256 p, g, m, v;
  if (lanes == 8) {
    p = _mm256_loadu_ps(b.params + i);
    g = _mm256_loadu_ps(b.grads + i);
    m = _mm256_loadu_ps(b.expAvg + i);
    v = _mm256_loadu_ps(b.expAvgSq + i);
  } else {
    p = _mm256_maskload_ps(b.params + i, mask);
    g = _mm256_maskload_ps(b.grads + i, mask);
    m = _mm256_maskload_ps(b.expAvg + i, mask);
    v = _mm256_maskload_ps(b.expAvgSq + i, mask);
  }
  if (kDecay) {
    p = _mm256_mul_ps(p, c.decay);
  }
  if (kL2) {
    g = _mm256_fmadd_ps(p, c.l2, g);
  }
  m = _mm256_fmadd_ps(g, c.oneMinusBeta1, _mm256_mul_ps(m, c.beta1));
  v = _mm256_fmadd_ps(_mm256_mul_ps(c.oneMinusBeta2, g), g, _mm256_mul_ps(v, c.beta2));
  __m256 denom = _mm256_sqrt_ps(v);
  if (kDivBc2) {
    denom = _mm256_div_ps(denom, c.bc2Sqrt);
  }
  denom = _mm256_add_ps(denom, c.eps);
  p = _mm256_add_ps(p, _mm256_div_ps(_mm256_mul_ps(c.negStepSize, m), denom));
  if (lanes == 8) {
    _mm256_storeu_ps(b.params + i, p);
    _mm256_storeu_ps(b.expAvg + i, m);
    _mm256_storeu_ps(b.expAvgSq + i, v);
  } else {
    _mm256_maskstore_ps(b.params + i, mask, p);
    _mm256_maskstore_ps(b.expAvg + i, mask, m);
    _mm256_maskstore_ps(b.expAvgSq + i, mask, v);
  }
  if (b.lowKind != LowPrecisionKind::kNone) {
    const __m128i low = b.lowKind == LowPrecisionKind::kFp16
                            ? _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                            : toBf16(p);
    storeLow(b.lowOut + i, low, lanes);
  }
}

template <bool kDecay, bool kL2, bool kDivBc2>
void run(const AdamBuffers& b, const Consts& c, int64_t begin, int64_t end) {
  int64_t i = begin;
  const __m256i all = _mm256_set1_epi32(-1);
  for (; i + 8 <= end; i += 8) {
    update<kDecay, kL2, kDivBc2>(b, c, i, all, 8);
  }
  if (i < end) {
    const int lanes = static_cast<int>(end - i);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    update<kDecay, kL2, kDivBc2>(b, c, i, mask, lanes);
  }
}

}  // namespace

void adamRangeAvx2(const AdamBuffers& b, const AdamConstants& k, int64_t begin, int64_t end) {
  const Consts c{_mm256_set1_ps(k.beta1), _mm256_set1_ps(k.oneMinusBeta1), _mm256_set1_ps(k.beta2),
                 _mm256_set1_ps(k.oneMinusBeta2), _mm256_set1_ps(k.eps), _mm256_set1_ps(k.bc2Sqrt),
                 _mm256_set1_ps(k.negStepSize), _mm256_set1_ps(k.l2), _mm256_set1_ps(k.decay)};
  // Decay and L2 never apply together (decoupled or not), so three flags give six instantiations.
  if (k.hasDecay) {
    k.divideBc2 ? run<true, false, true>(b, c, begin, end) : run<true, false, false>(b, c, begin, end);
  } else if (k.hasL2) {
    k.divideBc2 ? run<false, true, true>(b, c, begin, end) : run<false, true, false>(b, c, begin, end);
  } else {
    k.divideBc2 ? run<false, false, true>(b, c, begin, end) : run<false, false, false>(b, c, begin, end);
  }
}

}  // namespace dsrt::optim::detail
