#include "runtime/config/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace dsrt::config {
namespace {

// Python's float(a) / b on integers: exact conversion then one correctly rounded division, as here.
double warmupGamma(const SchedulerConfig& s, int64_t it, int64_t warmupSteps) {
  if (s.warmupType == WarmupType::Log) {
    double inverseLogWarmUp = 1.0 / std::log(static_cast<double>(warmupSteps));
    return inverseLogWarmUp * std::log(static_cast<double>(it + 1));
  }
  return static_cast<double>(it) / static_cast<double>(warmupSteps);
}

double warmupLr(const SchedulerConfig& s, int64_t it) {
  if (it < 0) {
    return s.warmupMinLr;  // "Attempting to get learning rate from scheduler before it has started"
  }
  const int64_t warmupSteps = std::max<int64_t>(2, s.warmupNumSteps);
  double gamma = 1.0;
  if (it < warmupSteps) {
    gamma = warmupGamma(s, it, warmupSteps);
  } else if (s.type == SchedulerType::WarmupDecayLR) {
    gamma = std::max(0.0, static_cast<double>(s.totalNumSteps - it) /
                              std::max(1.0, static_cast<double>(s.totalNumSteps - warmupSteps)));
  }
  double delta = s.warmupMaxLr - s.warmupMinLr;
  return s.warmupMinLr + delta * gamma;
}

double warmupCosineLr(const SchedulerConfig& s, int64_t it) {
  if (it < 0) {
    return 0.0;  // DeepSpeed's WarmupCosineLR.get_lr() returns [0.0] before the first step
  }
  const int64_t warmupSteps = std::max<int64_t>(2, s.warmupNumSteps);
  double ratio;
  if (it < warmupSteps) {
    ratio = warmupGamma(s, it, warmupSteps);
    double ratioDelta = 1.0 - s.warmupMinRatio;
    ratio = s.warmupMinRatio + ratio * ratioDelta;
  } else {
    int64_t realLastStep = it - warmupSteps + 1;
    int64_t realTotalSteps = s.totalNumSteps - warmupSteps;
    double ratioDelta = 1.0 - s.cosMinRatio;
    ratio = (1 + std::cos(M_PI * static_cast<double>(realLastStep) / static_cast<double>(realTotalSteps))) / 2;
    ratio = std::max(0.0, s.cosMinRatio + ratioDelta * ratio);
  }
  return s.baseLr * ratio;
}

struct CycleShape {
  double totalSize;
  double stepRatio;
};

CycleShape cycleShape(const SchedulerConfig& s) {
  double first = static_cast<double>(s.cycleFirstStepSize);
  double total = first + static_cast<double>(s.cycleSecondStepSize);
  return {total, first / total};
}

double oneCycleScale(const CycleShape& c, int64_t it) {
  double batchIteration = static_cast<double>(it + 1);
  double cycle = std::floor(1 + batchIteration / c.totalSize);
  double x = 1. + batchIteration / c.totalSize - cycle;
  return x <= c.stepRatio ? x / c.stepRatio : (x - 1) / (c.stepRatio - 1);
}

double decayInterval(const SchedulerConfig& s, const CycleShape& c, int64_t it) {
  // decay_batch_iteration = last_batch_iteration - total_size + 1, a float because total_size is one.
  double decayBatchIteration = static_cast<double>(it) - c.totalSize + 1;
  return decayBatchIteration / static_cast<double>(s.decayStepSize);
}

double oneCycleLr(const SchedulerConfig& s, int64_t it) {
  const CycleShape c = cycleShape(s);
  if (static_cast<double>(it) < c.totalSize) {
    double baseHeight = (s.cycleMaxLr - s.cycleMinLr) * oneCycleScale(c, it);
    return s.cycleMinLr + baseHeight;
  }
  if (s.decayStepSize == 0 || s.decayLrRate == 0.0) {  // skip_lr_decay (math.isclose(x, 0) means x == 0)
    return s.cycleMinLr;
  }
  double lrDecayFactor = 1 + s.decayLrRate * decayInterval(s, c, it);
  return s.cycleMinLr / lrDecayFactor;
}

double rangeTestLr(const SchedulerConfig& s, int64_t it) {
  double interval = static_cast<double>(it + 1) / static_cast<double>(s.lrRangeTestStepSize);
  if (s.lrRangeTestStaircase) {
    interval = std::floor(interval);
  }
  return s.lrRangeTestMinLr * (1 + s.lrRangeTestStepRate * interval);
}

}  // namespace

double learningRate(const SchedulerConfig& s, int64_t lastBatchIteration) {
  switch (s.type) {
    case SchedulerType::WarmupLR:
    case SchedulerType::WarmupDecayLR:
      return warmupLr(s, lastBatchIteration);
    case SchedulerType::WarmupCosineLR:
      return warmupCosineLr(s, lastBatchIteration);
    case SchedulerType::OneCycle:
      return oneCycleLr(s, lastBatchIteration);
    case SchedulerType::LRRangeTest:
      return rangeTestLr(s, lastBatchIteration);
  }
  return 0.0;
}

std::optional<std::array<double, 2>> oneCycleBetas(const SchedulerConfig& s, int64_t lastBatchIteration,
                                                   bool optimizerHasBetas) {
  if (s.type != SchedulerType::OneCycle || !s.cycleMomentum || !optimizerHasBetas) {
    return std::nullopt;
  }
  if (lastBatchIteration < 0) {
    return std::array<double, 2>{s.cycleMinMom, 0.99};  // OneCycle.__init__ sets the min momentum
  }
  const CycleShape c = cycleShape(s);
  if (static_cast<double>(lastBatchIteration) < c.totalSize) {
    double baseHeight = (s.cycleMaxMom - s.cycleMinMom) * oneCycleScale(c, lastBatchIteration);
    return std::array<double, 2>{s.cycleMaxMom - baseHeight, 0.99};
  }
  if (s.decayStepSize == 0 || s.decayMomRate == 0.0) {  // skip_mom_decay
    return std::array<double, 2>{s.cycleMaxMom, 0.99};
  }
  double momDecayFactor = 1 + s.decayMomRate * decayInterval(s, c, lastBatchIteration);
  return std::array<double, 2>{s.cycleMaxMom * momDecayFactor, 0.99};
}

}  // namespace dsrt::config
