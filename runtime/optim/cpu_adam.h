#pragma once
// Vectorised CPU Adam/AdamW over raw fp32 buffers: the kernel behind the Adam FlatOptimizer, ZeRO-Offload
// and the non-offloaded CPU path. Variants: a scalar reference (the oracle), AVX2+FMA and AVX-512, picked
// at run time by CPUID. All variants evaluate torch.optim.Adam/AdamW's per-element expression in the same
// order with the same roundings, so they agree with each other bit for bit (see docs/cpu_adam.md).

#include <cstdint>

namespace dsrt::optim {

/// Instruction-set variants of the kernel.
enum class CpuIsa { kScalar, kAvx2, kAvx512 };

/// Optional low-precision copy of the updated parameters, written in the same pass.
enum class LowPrecisionKind { kNone, kFp16, kBf16 };

/// One Adam step's hyper-parameters; `step` is the 1-based count after this update (torch's state["step"]).
struct AdamHyper {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  /// true: AdamW (p *= 1 - lr*wd before the update); false: Adam (g += wd*p).
  bool decoupled = false;
  bool biasCorrection = true;
  int64_t step = 1;
};

/// The buffers one step reads and writes; all hold `numel` elements, none may alias another.
struct AdamBuffers {
  float* params = nullptr;
  const float* grads = nullptr;
  float* expAvg = nullptr;
  float* expAvgSq = nullptr;
  /// Receives the updated params as fp16/bf16 bits when lowKind != kNone.
  uint16_t* lowOut = nullptr;
  LowPrecisionKind lowKind = LowPrecisionKind::kNone;
  int64_t numel = 0;
};

/// Per-step constants, already rounded to float exactly where torch's kernels round them.
struct AdamConstants {
  float beta1;
  float oneMinusBeta1;
  float beta2;
  float oneMinusBeta2;
  float eps;
  /// sqrt(1 - beta2^step), or 1 without bias correction (the division is then skipped).
  float bc2Sqrt;
  bool divideBc2;
  /// -lr / (1 - beta1^step).
  float negStepSize;
  /// Adam's L2 term (g += l2 * p); 0 when decoupled.
  float l2;
  bool hasL2;
  /// AdamW's factor 1 - lr*wd; 1 when not decoupled.
  float decay;
  bool hasDecay;
};

/// Computes the constants of `hyper` (pure). Throws c10::Error if step < 1.
AdamConstants adamConstants(const AdamHyper& hyper);

/// The best variant this CPU runs (AVX-512 > AVX2+FMA > scalar); DSRT_CPU_ADAM_ISA=scalar|avx2|avx512
/// caps it (a request the CPU cannot run falls back to the best supported one).
CpuIsa bestCpuIsa();
/// Whether this CPU can run `isa` (CPUID via __builtin_cpu_supports).
bool cpuIsaSupported(CpuIsa isa);
/// "scalar", "avx2" or "avx512".
const char* cpuIsaName(CpuIsa isa);

/// One Adam/AdamW step over `buffers` with `numThreads` threads (0: at::get_num_threads()), in chunks
/// split on 64-element boundaries. Blocking; safe to call from any one thread at a time per buffer set.
/// Throws c10::Error if `isa` is not supported here or the buffers are inconsistent.
void cpuAdamStep(const AdamBuffers& buffers, const AdamHyper& hyper, int numThreads, CpuIsa isa);
/// Same with bestCpuIsa().
void cpuAdamStep(const AdamBuffers& buffers, const AdamHyper& hyper, int numThreads);

namespace detail {
/// Single-threaded kernels over elements [begin, end) of `buffers`; one per translation unit.
void adamRangeScalar(const AdamBuffers& buffers, const AdamConstants& c, int64_t begin, int64_t end);
void adamRangeAvx2(const AdamBuffers& buffers, const AdamConstants& c, int64_t begin, int64_t end);
void adamRangeAvx512(const AdamBuffers& buffers, const AdamConstants& c, int64_t begin, int64_t end);
/// Scalar fp32 -> fp16 / bf16 conversions with round-to-nearest-even (c10::Half / c10::BFloat16 rules).
uint16_t floatToHalfBits(float f);
uint16_t floatToBf16Bits(float f);
}  // namespace detail

}  // namespace dsrt::optim
