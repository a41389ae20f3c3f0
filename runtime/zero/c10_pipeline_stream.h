#pragma once
// The offload pipeline's streams and events (offload_pipeline.h) on a real device: a c10::Stream and
// c10::Event of the device's backend, through c10's device-generic guard, so nothing here names CUDA.

#include "runtime/zero/offload_pipeline.h"

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

namespace dsrt::zero {

class C10PipelineStream final : public PipelineStream {
 public:
  explicit C10PipelineStream(c10::Stream stream) : stream_(stream) {}
  /// The device's current stream (where the caller's kernels run).
  static C10PipelineStream current(c10::Device device);
  /// A stream of the device's pool, for copies beside the compute stream.
  static C10PipelineStream fromPool(c10::Device device);

  void enqueue(const std::function<void()>& issue) override;
  std::shared_ptr<PipelineEvent> record() override;
  /// `event` must come from a C10PipelineStream.
  void waitFor(const PipelineEvent& event) override;
  /// The same as enqueue(): a device stream orders what is launched on it.
  void launchAfterQueued(const std::function<void()>& launch) override { enqueue(launch); }

 private:
  c10::Stream stream_;
};

}  // namespace dsrt::zero
