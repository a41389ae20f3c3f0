// AVX-512F variant (compiled with -mavx512f -ffp-contract=off). Same expression, operation for operation,
// as cpu_adam_scalar.cc; the tail runs the same vector code under a mask, so sizes need not be multiples
// of 16.

#include <immintrin.h>

#include "runtime/optim/cpu_adam.h"

namespace dsrt::optim::detail {
namespace {

struct Consts {
  __m512 beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, bc2Sqrt, negStepSize, l2, decay;
};

// fp32 -> bf16 bits, round to nearest even, NaN -> 0x7FC0: c10::BFloat16's rule, 16 lanes at a time.
inline __m256i toBf16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i bias = _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  r = _mm512_mask_blend_epi32(nan, r, _mm512_set1_epi32(0x7FC0));
  return _mm512_cvtepi32_epi16(r);
}

// 16-bit masked stores need AVX512BW; this TU stays AVX512F-only, so a partial vector goes through a buffer.
inline void storeLow(uint16_t* out, __m256i low, __mmask16 mask) {
  if (mask == 0xFFFF) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), low);
    return;
  }
  alignas(32) uint16_t tmp[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), low);
  for (int j = 0; j < 16 && ((mask >> j) & 1); ++j) {
    out[j] = tmp[j];
  }
}

template <bool kDecay, bool kL2, bool kDivBc2>
inline void update(const AdamBuffers& b, const Consts& c, int64_t i, __mmask16 mask) {
  __m512 p = _mm512_maskz_loadu_ps(mask, b.params + i);
  __m512 g = _mm512_maskz_loadu_ps(mask, b.grads + i);
  __m512 m = _mm512_maskz_loadu_ps(mask, b.expAvg + i);
  __m512 v = _mm512_maskz_loadu_ps(mask, b.expAvgSq + i);
  if (kDecay) {
    p = _mm512_mul_ps(p, c.decay);
  }
  if (kL2) {
    g = _mm512_fmadd_ps(p, c.l2, g);
  }
  m = _mm512_fmadd_ps(g, c.oneMinusBeta1, _mm512_mul_ps(m, c.beta1));
  v = _mm512_fmadd_ps(_mm512_mul_ps(c.oneMinusBeta2, g), g, _mm512_mul_ps(v, c.beta2));
  __m512 denom = _mm512_sqrt_ps(v);
  if (kDivBc2) {
    denom = _mm512_div_ps(denom, c.bc2Sqrt);
  }
  denom = _mm512_add_ps(denom, c.eps);
  p = _mm512_add_ps(p, _mm512_div_ps(_mm512_mul_ps(c.negStepSize, m), denom));
  _mm512_mask_storeu_ps(b.params + i, mask, p);
  _mm512_mask_storeu_ps(b.expAvg + i, mask, m);
  _mm512_mask_storeu_ps(b.expAvgSq + i, mask, v);
  if (b.lowKind != LowPrecisionKind::kNone) {
    const __m256i low = b.lowKind == LowPrecisionKind::kFp16
                            ? _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                            : toBf16(p);
    storeLow(b.lowOut + i, low, mask);
  }
}

template <bool kDecay, bool kL2, bool kDivBc2>
void run(const AdamBuffers& b, const Consts& c, int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    update<kDecay, kL2, kDivBc2>(b, c, i, 0xFFFF);
  }
  if (i < end) {
    update<kDecay, kL2, kDivBc2>(b, c, i, static_cast<__mmask16>((1u << (end - i)) - 1));
  }
}

}  // namespace

void adamRangeAvx512(const AdamBuffers& b, const AdamConstants& k, int64_t begin, int64_t end) {
  const Consts c{_mm512_set1_ps(k.beta1), _mm512_set1_ps(k.oneMinusBeta1), _mm512_set1_ps(k.beta2),
                 _mm512_set1_ps(k.oneMinusBeta2), _mm512_set1_ps(k.eps), _mm512_set1_ps(k.bc2Sqrt),
                 _mm512_set1_ps(k.negStepSize), _mm512_set1_ps(k.l2), _mm512_set1_ps(k.decay)};
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
