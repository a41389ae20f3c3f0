#pragma once
// A stand-in for a device stream (runtime/zero/offload_pipeline.h) that behaves like one where it matters:
// enqueued work does NOT run when it is enqueued, only when something needs it: a host wait on an event
// after it, or work on another stream that was told to wait for such an event and is itself run. So a
// schedule that forgets a wait reads or writes data too early here, and a test that compares results
// catches it. Every call is written to a shared log, for tests of the order.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/zero/offload_pipeline.h"

namespace dsrt::testing {

class FakePipelineStream final : public dsrt::zero::PipelineStream {
 public:
  /// `eager`: the stream runs what it is given at once (after what it waits for), as the host does for
  /// CPU tensors: the compute stream of a CPU test, whose kernels the test's own code runs in place.
  FakePipelineStream(std::string name, std::vector<std::string>* log, bool eager = false)
      : name_(std::move(name)), log_(log), eager_(eager) {}

  void enqueue(const std::function<void()>& issue) override {
    log_->push_back(name_ + " enqueue");
    queue_.push_back(issue);
    runIfEager();
  }
  std::shared_ptr<dsrt::zero::PipelineEvent> record() override {
    return std::make_shared<Event>(this, queue_.size());
  }
  void waitFor(const dsrt::zero::PipelineEvent& event) override {
    const auto& e = dynamic_cast<const Event&>(event);
    log_->push_back(name_ + " waits for " + e.stream->name_);
    queue_.push_back([stream = e.stream, position = e.position] { stream->runUpTo(position); });
    runIfEager();
  }
  void launchAfterQueued(const std::function<void()>& launch) override {
    log_->push_back(name_ + " launches");
    drain();
    launch();
  }
  /// Runs everything enqueued so far (what a device synchronize does).
  void drain() { runUpTo(queue_.size()); }
  const std::string& name() const { return name_; }

 private:
  struct Event final : dsrt::zero::PipelineEvent {
    Event(FakePipelineStream* s, size_t p) : stream(s), position(p) {}
    void hostWait() override {
      stream->log_->push_back("host waits for " + stream->name_);
      stream->runUpTo(position);
    }
    FakePipelineStream* stream;
    size_t position;
  };

  void runIfEager() {
    if (eager_) {
      drain();
    }
  }
  void runUpTo(size_t position) {
    while (done_ < position) {
      const std::function<void()> work = queue_[done_++];  // a copy: work may enqueue (never here, but safe)
      work();
    }
  }

  std::string name_;
  std::vector<std::string>* log_;
  bool eager_;
  std::vector<std::function<void()>> queue_;
  size_t done_ = 0;
};

}  // namespace dsrt::testing
