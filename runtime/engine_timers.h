#pragma once
// wall_clock_breakdown's timers: forward, backward, allreduce (waiting for gradient reduction after
// backward) and step (clipping + optimizer + scheduler), accumulated between prints.

#include <array>
#include <chrono>
#include <string>

namespace dsrt {

class EngineTimers {
 public:
  enum Phase { kForward = 0, kBackward, kAllreduce, kStep, kNumPhases };

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

  Scope scope(Phase phase) { return Scope(*this, phase); }
  void add(Phase phase, std::chrono::steady_clock::duration d) { total_[phase] += d; }
  /// Milliseconds accumulated in `phase` since the last reset().
  double ms(Phase phase) const { return std::chrono::duration<double, std::milli>(total_[phase]).count(); }
  void reset() { total_.fill(std::chrono::steady_clock::duration::zero()); }
  /// "forward: 1.23 | backward: 4.56 | allreduce: 0.12 | step: 2.00" (ms per optimizer step over `steps`).
  std::string format(int64_t steps) const;

 private:
  std::array<std::chrono::steady_clock::duration, kNumPhases> total_{};
};

}  // namespace dsrt
