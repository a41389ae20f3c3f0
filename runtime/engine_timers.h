#pragma once
// wall_clock_breakdown's timers: forward, backward, allreduce (waiting for gradient reduction after
// backward) and step (clipping + optimizer + scheduler), accumulated between prints; plus the ZeRO
// phases nested inside them (DeepSpeed's optimizer_gradients / optimizer_step / optimizer_allgather):
// waiting for reduce-scatters, copying gradients in and out of reduction buckets, the optimizer update
// of the partition, and the all-gather of the updated partitions.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace dsrt {

class EngineTimers {
 public:
  enum Phase {
    kForward = 0,
    kBackward,
    kAllreduce,
    kStep,
    // ZeRO sub-phases (inside backward, allreduce or step above; zero and not printed at stage 0).
    kReduceScatter,  ///< waiting for gradient reduce-scatters (or allreduces) to complete
    kGradCopy,       ///< gradients copied into buckets and averaged runs out of them
    kOptimizerStep,  ///< optimizer update of this rank's partition (incl. fp32/offload copies)
    kAllgather,      ///< all-gather of the updated partitions
    // ZeRO-3 parameter gathers (inside forward and backward; printed only when timed).
    kParamGather,  ///< waiting for gathered parameters to arrive
    kParamCopy,    ///< packing partitions for a gather and installing the gathered parameters
    kNumPhases
  };

  /// RAII: adds the scope's wall time to `phase`.
  class Scope {
   public:
    Scope(EngineTimers& timers, Phase phase)
        : timers_(timers), phase_(phase), start_(std::chrono::steady_clock::now()) {}
    ~Scope() { timers_.add(phase_, std::chrono::steady_clock::now() - start_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    EngineTimers& timers_;
    Phase phase_;
    std::chrono::steady_clock::time_point start_;
  };

  /// RAII like Scope, a no-op when `timers` is null (a strategy built without an engine, as in tests).
  class MaybeScope {
   public:
    MaybeScope(EngineTimers* timers, Phase phase) {
      if (timers != nullptr) {
        scope_.emplace(*timers, phase);
      }
    }

   private:
    std::optional<Scope> scope_;
  };

  Scope scope(Phase phase) { return Scope(*this, phase); }
  void add(Phase phase, std::chrono::steady_clock::duration d) { total_[phase] += d; }
  /// Milliseconds accumulated in `phase` since the last reset().
  double ms(Phase phase) const { return std::chrono::duration<double, std::milli>(total_[phase]).count(); }
  void reset() { total_.fill(std::chrono::steady_clock::duration::zero()); }
  /// "forward: 1.23 | backward: 4.56 | allreduce: 0.12 | step: 2.00" (ms per optimizer step over `steps`),
  /// followed by " | reduce_scatter: ... | grad_copy: ... | optimizer_step: ... | optimizer_allgather: ..."
  /// when any ZeRO phase was timed, and " | param_gather: ... | param_copy: ..." when ZeRO-3's were.
  std::string format(int64_t steps) const;

 private:
  std::array<std::chrono::steady_clock::duration, kNumPhases> total_{};
};

}  // namespace dsrt
