#include "runtime/zero/stage3_fetch_plan.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace dsrt::zero {

namespace {

void checkInputs(const std::vector<int>& trace, const std::vector<int64_t>& unitNumels, const FetchSettings& s) {
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace[i] < 0 || static_cast<size_t>(trace[i]) >= unitNumels.size()) {
      throw std::invalid_argument("planFetches: trace[" + std::to_string(i) + "] is not a unit in [0, " +
                                  std::to_string(unitNumels.size()) + "), got '" + std::to_string(trace[i]) + "'");
    }
  }
  if (s.prefetchBucketNumel < 0 || s.maxLiveNumel < 0 || s.maxReuseDistance < 0) {
    throw std::invalid_argument("planFetches: stage3 limits must be >= 0, got '" +
                                std::to_string(std::min({s.prefetchBucketNumel, s.maxLiveNumel, s.maxReuseDistance})) +
                                "'");
  }
}

}  // namespace

FetchPlan planFetches(const std::vector<int>& trace, const std::vector<int64_t>& unitNumels,
                      const FetchSettings& settings) {
  checkInputs(trace, unitNumels, settings);
  const size_t n = trace.size();
  constexpr size_t kNever = std::numeric_limits<size_t>::max();
  // nextUse[i]: the next position of trace[i] after i (kNever if none).
  std::vector<size_t> nextUse(n, kNever);
  std::vector<size_t> seen(unitNumels.size(), kNever);
  for (size_t i = n; i-- > 0;) {
    nextUse[i] = seen[static_cast<size_t>(trace[i])];
    seen[static_cast<size_t>(trace[i])] = i;
  }
  // prefix[i]: elements fetched by positions [0, i), so the distance between i and j is a difference.
  std::vector<int64_t> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    prefix[i + 1] = prefix[i] + unitNumels[static_cast<size_t>(trace[i])];
  }

  FetchPlan plan;
  plan.steps.resize(n);
  std::vector<bool> live(unitNumels.size(), false);
  std::vector<size_t> keptUntil(unitNumels.size(), kNever);  // kept units: their next use; else kNever
  int64_t liveNumel = 0;
  auto gather = [&](int u) {
    live[static_cast<size_t>(u)] = true;
    liveNumel += unitNumels[static_cast<size_t>(u)];
    plan.fetchedNumel += unitNumels[static_cast<size_t>(u)];
  };
  auto drop = [&](int u) {
    live[static_cast<size_t>(u)] = false;
    keptUntil[static_cast<size_t>(u)] = kNever;
    liveNumel -= unitNumels[static_cast<size_t>(u)];
  };
  for (size_t i = 0; i < n; ++i) {
    const int u = trace[i];
    FetchStep& step = plan.steps[i];
    keptUntil[static_cast<size_t>(u)] = kNever;  // in use now, no longer merely kept
    const int64_t need = live[static_cast<size_t>(u)] ? 0 : unitNumels[static_cast<size_t>(u)];
    while (liveNumel + need > settings.maxLiveNumel) {
      int farthest = -1;  // make room: the kept unit needed farthest ahead goes first
      for (size_t w = 0; w < unitNumels.size(); ++w) {
        if (keptUntil[w] != kNever && (farthest < 0 || keptUntil[w] > keptUntil[static_cast<size_t>(farthest)])) {
          farthest = static_cast<int>(w);
        }
      }
      if (farthest < 0) {
        break;  // nothing kept: the unit is needed now, whatever its size
      }
      step.evict.push_back(farthest);
      drop(farthest);
    }
    if (!live[static_cast<size_t>(u)]) {
      gather(u);
    }
    int64_t prefetched = 0;
    for (size_t k = i + 1; k < n && settings.prefetchBucketNumel > 0; ++k) {
      const int v = trace[k];
      if (live[static_cast<size_t>(v)]) {
        continue;
      }
      const int64_t numel = unitNumels[static_cast<size_t>(v)];
      if (prefetched + numel > settings.prefetchBucketNumel || liveNumel + numel > settings.maxLiveNumel) {
        break;
      }
      gather(v);
      prefetched += numel;
      step.prefetch.push_back(v);
    }
    plan.peakLiveNumel = std::max(plan.peakLiveNumel, liveNumel);
    const size_t next = nextUse[i];
    const bool keep = next != kNever && prefix[next] - prefix[i + 1] <= settings.maxReuseDistance &&
                      liveNumel <= settings.maxLiveNumel;
    step.release = !keep;
    if (keep) {
      keptUntil[static_cast<size_t>(u)] = next;
    } else {
      drop(u);
    }
  }
  return plan;
}

std::vector<bool> markPersistent(const std::vector<int64_t>& paramNumels, int64_t paramThreshold,
                                 int64_t modelThreshold) {
  if (paramThreshold < 0 || modelThreshold < 0) {
    throw std::invalid_argument("stage3 persistence thresholds must be >= 0, got '" + std::to_string(paramThreshold) +
                                ", " + std::to_string(modelThreshold) + "'");
  }
  std::vector<bool> persistent;
  int64_t total = 0;
  for (int64_t numel : paramNumels) {
    if (numel < 0) {
      throw std::invalid_argument("parameter numel must be >= 0, got '" + std::to_string(numel) + "'");
    }
    // DeepSpeed tests the model budget first (numel + total > model threshold: skip), then the size.
    const bool keep = numel <= modelThreshold - total && numel <= paramThreshold;
    persistent.push_back(keep);
    if (keep) total += numel;
  }
  return persistent;
}

}  // namespace dsrt::zero
