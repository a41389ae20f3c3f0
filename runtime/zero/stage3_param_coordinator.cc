#include "runtime/zero/stage3_param_coordinator.h"

#include "runtime/zero/offload_pipeline.h"
#include "runtime/zero/stage3_registry.h"

#include <c10/util/Exception.h>
#include <c10/util/Logging.h>

#include <algorithm>

namespace dsrt::zero {

namespace {

constexpr size_t kMaxTrace = 1 << 20;  // a micro-step with more fetches is not planned

std::vector<std::vector<int64_t>> shapesOf(const std::vector<at::Tensor>& params) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : params) {
    shapes.push_back(p.sizes().vec());
  }
  return shapes;
}

}  // namespace

Stage3ParamCoordinator::Stage3ParamCoordinator(const StrategyContext& ctx, const PartitionPlan& plan,
                                               at::Tensor partition, Settings settings)
    : params_(ctx.params),
      plan_(plan),
      settings_(settings),
      gatherer_(ctx.pg, ctx.rank, plan, ctx.params, shapesOf(ctx.params), std::move(partition)),
      inUse_(ctx.params.size(), 0) {
  gatherer_.setTimers(ctx.timers);
  gatherer_.setCommsLog(ctx.commsLog);
  if (ctx.offloadParam && ctx.testStreams != nullptr) {
    gatherer_.useUploadStreams(ctx.testStreams->compute, ctx.testStreams->upload);
  }
  std::vector<int64_t> numels;
  for (const auto& p : params_) numels.push_back(p.numel());
  persistent_ = markPersistent(numels, settings_.persistenceThreshold, settings_.modelPersistenceThreshold);
  for (size_t i = 0; i < params_.size(); ++i) {
    const bool keep = persistent_[i];
    if (keep) {
      persistentParams_.push_back(static_cast<int64_t>(i));
    } else {
      gatherer_.release(static_cast<int64_t>(i));
    }
  }
  registryId_ = Stage3Registry::add(this, params_);
}

Stage3ParamCoordinator::~Stage3ParamCoordinator() {
  Stage3Registry::remove(registryId_);
}

int Stage3ParamCoordinator::defineUnit(std::vector<int64_t> params) {
  std::sort(params.begin(), params.end());
  params.erase(std::unique(params.begin(), params.end()), params.end());
  params.erase(std::remove_if(params.begin(), params.end(), [&](int64_t p) { return persistent(p); }), params.end());
  auto it = unitIds_.find(params);
  if (it != unitIds_.end()) {
    return it->second;
  }
  int64_t numel = 0;
  for (int64_t p : params) {
    numel += plan_.paramNumels[static_cast<size_t>(p)];
  }
  const int id = static_cast<int>(units_.size());
  units_.push_back(params);
  unitNumels_.push_back(numel);
  unitIds_.emplace(std::move(params), id);
  return id;
}

Stage3ParamCoordinator::Gate* Stage3ParamCoordinator::gate(int64_t id) {
  const int64_t index = id & 0xffffffff;
  if ((id >> 32) != epoch_ || index >= static_cast<int64_t>(gates_.size())) {
    return nullptr;  // a graph from an earlier micro-step: its parameters were released at its end
  }
  return &gates_[static_cast<size_t>(index)];
}

int64_t Stage3ParamCoordinator::fetch(int unit, bool traced) {
  int64_t pos = -1;
  if (!traced) {
    // not part of the training micro-step's order
  } else if (recording_) {
    if (trace_.size() < kMaxTrace) {
      pos = static_cast<int64_t>(trace_.size());
      trace_.push_back(unit);
    } else {
      diverged_ = true;
    }
  } else if (!diverged_) {
    if (cursor_ < trace_.size() && trace_[cursor_] == unit) {
      pos = static_cast<int64_t>(cursor_++);
    } else {
      diverged_ = true;  // the order changed: no more planned prefetch/keep this micro-step
      LOG(WARNING) << "dsrt zero stage 3: module fetch order differs from the recorded trace at fetch " << cursor_
                   << "; re-tracing on the next micro-step";
    }
  }
  const bool planned = pos >= 0 && fetchPlan_ && !diverged_;
  if (planned) {
    for (int v : fetchPlan_->steps[static_cast<size_t>(pos)].evict) {
      releaseUnit(v);  // make room under stage3_max_live_parameters
    }
  }
  const std::vector<int64_t>& params = units_[static_cast<size_t>(unit)];
  gatherer_.fetch(params);
  for (int64_t p : params) {
    inUse_[static_cast<size_t>(p)] += 1;
  }
  if (planned) {
    // One all-gather for everything this position prefetches (at most stage3_prefetch_bucket_size).
    std::vector<int64_t> prefetch;
    for (int v : fetchPlan_->steps[static_cast<size_t>(pos)].prefetch) {
      const auto& vp = units_[static_cast<size_t>(v)];
      prefetch.insert(prefetch.end(), vp.begin(), vp.end());
    }
    gatherer_.launch(prefetch);
  }
  notePeak();
  return pos;
}

void Stage3ParamCoordinator::release(int unit, int64_t pos) {
  for (int64_t p : units_[static_cast<size_t>(unit)]) {
    inUse_[static_cast<size_t>(p)] -= 1;
  }
  if (pos < 0 || !fetchPlan_ || diverged_) {
    releaseUnit(unit);  // recording or diverged: nothing is known about the future
    return;
  }
  if (fetchPlan_->steps[static_cast<size_t>(pos)].release) {
    releaseUnit(unit);
  }
}

void Stage3ParamCoordinator::releaseUnit(int unit) {
  for (int64_t p : units_[static_cast<size_t>(unit)]) {
    if (inUse_[static_cast<size_t>(p)] == 0) {
      gatherer_.release(p);  // only kGathered parameters; a prefetch in flight stays
    }
  }
}

int64_t Stage3ParamCoordinator::beginForward(int unit, bool traced) {
  Gate g;
  g.unit = unit;
  g.forwardPos = fetch(unit, traced);
  gates_.push_back(g);
  return (epoch_ << 32) | static_cast<int64_t>(gates_.size() - 1);
}

void Stage3ParamCoordinator::endForward(int64_t id) {
  if (Gate* g = gate(id)) {
    release(g->unit, g->forwardPos);
  }
}

void Stage3ParamCoordinator::addInput(int64_t id) {
  if (Gate* g = gate(id)) {
    g->inputs += 1;
  }
}

void Stage3ParamCoordinator::preBackward(int64_t id) {
  Gate* g = gate(id);
  if (g && !g->preFired) {
    g->preFired = true;
    g->backwardPos = fetch(g->unit, true);
  }
}

void Stage3ParamCoordinator::postBackward(int64_t id) {
  Gate* g = gate(id);
  if (!g || g->released) {
    return;
  }
  g->inputs -= 1;
  if (g->inputs <= 0 && g->preFired) {
    g->released = true;
    release(g->unit, g->backwardPos);
  }
}

void Stage3ParamCoordinator::endMicroStep() {
  releaseAll();
  gates_.clear();
  ++epoch_;
  if (recording_) {
    if (!trace_.empty() && !diverged_) {
      fetchPlan_ = planFetches(trace_, unitNumels_, settings_.fetch);
      recording_ = false;
    } else {
      trace_.clear();
    }
  } else if (diverged_ || cursor_ != trace_.size()) {
    fetchPlan_.reset();
    trace_.clear();
    recording_ = true;
  }
  cursor_ = 0;
  diverged_ = false;
}

void Stage3ParamCoordinator::releaseAll() {
  gatherer_.completeAll();
  std::fill(inUse_.begin(), inUse_.end(), 0);
  for (size_t p = 0; p < params_.size(); ++p) {
    if (!persistent_[p]) {
      gatherer_.release(static_cast<int64_t>(p));
    }
  }
}

void Stage3ParamCoordinator::refreshPersistent() {
  gatherer_.refresh(persistentParams_);
}

int64_t Stage3ParamCoordinator::persistentBytes() const {
  int64_t bytes = 0;
  for (int64_t p : persistentParams_) {
    bytes += plan_.paramNumels[static_cast<size_t>(p)] * params_[static_cast<size_t>(p)].element_size();
  }
  return bytes;
}

int64_t Stage3ParamCoordinator::liveNumel() const {
  int64_t numel = 0;
  for (size_t p = 0; p < params_.size(); ++p) {
    if (!persistent_[p] && gatherer_.state(static_cast<int64_t>(p)) != Stage3ParamGatherer::State::kReleased) {
      numel += plan_.paramNumels[p];
    }
  }
  return numel;
}

void Stage3ParamCoordinator::notePeak() {
  peakLiveNumel_ = std::max(peakLiveNumel_, liveNumel());
}

}  // namespace dsrt::zero
