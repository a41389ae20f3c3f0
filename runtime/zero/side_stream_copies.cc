#include "runtime/zero/side_stream_copies.h"

#include <c10/util/Exception.h>

#include <exception>

#include "runtime/zero/c10_pipeline_stream.h"

namespace dsrt::zero {

SideStreamCopies::SideStreamCopies(c10::Device device)
    : device_(device), pooled_(std::make_unique<C10PipelineStream>(C10PipelineStream::fromPool(device))) {
  TORCH_INTERNAL_ASSERT(!device.is_cpu(), "side stream copies: the CPU has no streams");
  side_ = pooled_.get();
}

SideStreamCopies::SideStreamCopies(PipelineStream* compute, PipelineStream* side)
    : device_(c10::kCPU), injectedCompute_(compute), side_(side) {
  TORCH_INTERNAL_ASSERT(compute != nullptr && side != nullptr, "side stream copies: a stream is missing");
}

SideStreamCopies::~SideStreamCopies() {
  try {
    hostWaitsAll();
  } catch (const std::exception&) {  // already failing (a device error); a destructor must not throw
  }
}

PipelineStream& SideStreamCopies::compute() {
  if (injectedCompute_ != nullptr) {
    return *injectedCompute_;
  }
  current_ = std::make_unique<C10PipelineStream>(C10PipelineStream::current(device_));
  return *current_;
}

std::shared_ptr<PipelineEvent> SideStreamCopies::issue(const std::function<void()>& copy) {
  // The side stream joins the compute stream here, not at the copy's use: work enqueued on compute after
  // this call (the module that runs while a prefetch travels) does not hold the copy back.
  side_->waitFor(*compute().record());
  side_->enqueue(copy);
  last_ = side_->record();
  computeBehind_ = true;
  hostBehind_ = true;
  return last_;
}

void SideStreamCopies::launchAfterCopies(const std::function<void()>& launch) {
  side_->launchAfterQueued(launch);
}

void SideStreamCopies::computeWaits(const PipelineEvent& copied) {
  compute().waitFor(copied);
}

void SideStreamCopies::computeWaitsAll() {
  if (computeBehind_) {
    compute().waitFor(*last_);
    computeBehind_ = false;
  }
}

void SideStreamCopies::hostWaitsAll() {
  if (hostBehind_) {
    last_->hostWait();
    hostBehind_ = false;
  }
}

}  // namespace dsrt::zero
