#pragma once
// ZeRO-3's parameter coordinator (DeepSpeed's PartitionedParameterCoordinator): decides when each
// module's parameters are gathered and released. A unit is the set of managed parameters of one
// module passed to dsrt::zero::forward (runtime/zero/stage3_forward.h). Each use of a unit (its
// forward, its backward) is one fetch: the first micro-step records the order of fetches (the trace);
// when the next micro-step repeats it, planFetches() decides prefetching, keeping and eviction; when
// it diverges, everything is released after use and the trace is recorded again. Persistent
// parameters (numel <= stage3_param_persistence_threshold) stay gathered throughout.
//
// The autograd side: a gate is one call of dsrt::zero::forward. beginForward() fetches and opens it;
// endForward() releases after the module's forward; preBackward() (when the gradient of an output
// arrives) fetches again; postBackward() (when the gradients of all wrapped inputs are computed)
// releases. endMicroStep() releases whatever is still gathered.

#include "runtime/grad_strategy.h"
#include "runtime/zero/partition_plan.h"
#include "runtime/zero/stage3_fetch_plan.h"
#include "runtime/zero/stage3_param_gatherer.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace dsrt::zero {

/// Not thread-safe: the training thread (and autograd's, the same for CPU) only.
class Stage3ParamCoordinator {
 public:
  struct Settings {
    FetchSettings fetch;
    int64_t persistenceThreshold = 100000;  ///< stage3_param_persistence_threshold (elements)
    int64_t modelPersistenceThreshold = INT64_MAX;  ///< stage3_model_persistence_threshold (elements)
  };

  /// Registers the parameters with Stage3Registry and releases every non-persistent parameter.
  /// `partition`: this rank's partition in the parameters' dtype (what gathers read), aliased; with
  /// ctx.offloadParam and ctx.testStreams it is uploaded through those streams (tests).
  Stage3ParamCoordinator(const StrategyContext& ctx, const PartitionPlan& plan, at::Tensor partition,
                         Settings settings);
  ~Stage3ParamCoordinator();  ///< unregisters; parameters stay as they are (released ones empty)
  Stage3ParamCoordinator(const Stage3ParamCoordinator&) = delete;
  Stage3ParamCoordinator& operator=(const Stage3ParamCoordinator&) = delete;

  /// The unit of these parameter indices (one per distinct set).
  int defineUnit(std::vector<int64_t> params);

  /// `traced` false (a forward without grad, e.g. evaluation): the fetch neither joins nor consumes
  /// the trace, and the unit is released right after the forward.
  int64_t beginForward(int unit, bool traced = true);
  void endForward(int64_t gate);
  void addInput(int64_t gate);
  void preBackward(int64_t gate);
  void postBackward(int64_t gate);

  /// At endBackward: completes gathers in flight, releases every non-persistent parameter, closes
  /// the gates and decides whether the recorded trace becomes the plan.
  void endMicroStep();
  /// Re-gathers the persistent parameters (their partitions changed: after step or a load). Collective.
  void refreshPersistent();
  /// Releases every non-persistent parameter (after completing gathers in flight).
  void releaseAll();
  /// Blocks until no upload reads the host partition any more (offload_param on an accelerator): before
  /// the host rewrites it.
  void awaitPartitionReads() { gatherer_.awaitPartitionReads(); }

  bool persistent(int64_t param) const { return persistent_[static_cast<size_t>(param)]; }
  int64_t persistentBytes() const;
  const Stage3ParamGatherer& gatherer() const { return gatherer_; }
  /// True once a trace was recorded and is being replayed with planned prefetch/keep/evict.
  bool planned() const { return fetchPlan_.has_value(); }
  /// Non-persistent parameter elements gathered or in flight now, and the most seen at once.
  int64_t liveNumel() const;
  int64_t peakLiveNumel() const { return peakLiveNumel_; }

 private:
  struct Gate {
    int unit = 0;
    int64_t forwardPos = -1;   ///< trace position of the forward fetch (-1: untraced)
    int64_t backwardPos = -1;  ///< trace position of the backward fetch
    int inputs = 0;            ///< wrapped inputs whose gradient has not arrived yet
    bool preFired = false;
    bool released = false;
  };
  Gate* gate(int64_t id);
  int64_t fetch(int unit, bool traced);
  void release(int unit, int64_t pos);
  void releaseUnit(int unit);
  void notePeak();

  std::vector<at::Tensor> params_;
  const PartitionPlan& plan_;
  Settings settings_;
  std::vector<bool> persistent_;
  std::vector<int64_t> persistentParams_;
  Stage3ParamGatherer gatherer_;
  std::vector<int> inUse_;                       ///< per parameter: open uses (nested forwards)
  std::vector<std::vector<int64_t>> units_;      ///< unit -> non-persistent parameters
  std::vector<int64_t> unitNumels_;
  std::map<std::vector<int64_t>, int> unitIds_;
  std::vector<Gate> gates_;
  int64_t epoch_ = 0;                            ///< gate ids of older micro-steps are ignored
  std::vector<int> trace_;
  bool recording_ = true;
  bool diverged_ = false;
  size_t cursor_ = 0;
  std::optional<FetchPlan> fetchPlan_;
  int64_t peakLiveNumel_ = 0;
  int64_t registryId_ = -1;
};

}  // namespace dsrt::zero
