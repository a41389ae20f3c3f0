#pragma once
// Pure planner for ZeRO-3's parameter fetching: from the trace of one micro-step (the order in which
// modules were fetched, forward then backward, recorded on the first micro-step) to what to do at each
// fetch: which following modules to prefetch (stage3_prefetch_bucket_size), whether to keep the
// module's parameters gathered after use (stage3_max_reuse_distance) and which kept modules to
// release to stay under stage3_max_live_parameters. The executor (Stage3ParamCoordinator) replays it
// while the trace repeats. Torch-free; table-tested.

#include <cstdint>
#include <vector>

namespace dsrt::zero {

/// The stage3_* limits, all in elements (DeepSpeed's units).
struct FetchSettings {
  int64_t prefetchBucketNumel = 50000000;  ///< stage3_prefetch_bucket_size; 0 disables prefetch
  int64_t maxLiveNumel = 1000000000;       ///< stage3_max_live_parameters
  int64_t maxReuseDistance = 1000000000;   ///< stage3_max_reuse_distance; elements fetched in between
};

/// What to do at trace position i (the i-th fetch of the micro-step, of unit trace[i]).
struct FetchStep {
  std::vector<int> evict;     ///< before fetching trace[i]: kept units to release (max live)
  std::vector<int> prefetch;  ///< right after fetching trace[i]: units to gather asynchronously
  bool release = true;        ///< after trace[i]'s use: release it (false: keep it for its next use)
};

struct FetchPlan {
  std::vector<FetchStep> steps;  ///< one per trace position
  int64_t peakLiveNumel = 0;     ///< most elements gathered at once (units counted whole)
  int64_t fetchedNumel = 0;      ///< elements gathered over the micro-step (on demand + prefetch)
};

/// `trace`: unit ids in fetch order; `unitNumels[u]`: elements unit u gathers (its persistent
/// parameters excluded). Rules, simulated over the trace (live = gathered or in flight):
///  * before fetching trace[i], while the live total plus what it needs exceeds maxLiveNumel, the kept
///    unit used farthest ahead is released (evict);
///  * fetching trace[i] gathers it unless live; then the following units not yet live are prefetched
///    in trace order while their sum stays <= prefetchBucketNumel and the live total <= maxLiveNumel
///    (the first that does not fit stops the prefetch);
///  * after use, trace[i] is kept if it occurs again with at most maxReuseDistance elements of other
///    fetches in between and the live total is <= maxLiveNumel; otherwise released.
/// Throws std::invalid_argument for a unit id outside unitNumels or a negative setting.
FetchPlan planFetches(const std::vector<int>& trace, const std::vector<int64_t>& unitNumels,
                      const FetchSettings& settings);

/// Which parameters stay gathered for the whole run (DeepSpeed's mark_persistent_parameters): in
/// registration order, a parameter with at most `paramThreshold` elements
/// (stage3_param_persistence_threshold) is persistent unless adding it would take the persistent total
/// above `modelThreshold` (stage3_model_persistence_threshold); a parameter that would is skipped, and a
/// later, smaller one may still fit. Throws std::invalid_argument for a negative numel or threshold.
std::vector<bool> markPersistent(const std::vector<int64_t>& paramNumels, int64_t paramThreshold,
                                 int64_t modelThreshold);

}  // namespace dsrt::zero
