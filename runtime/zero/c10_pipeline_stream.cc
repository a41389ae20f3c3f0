#include "runtime/zero/c10_pipeline_stream.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

#include "runtime/compat/event_compat.h"

namespace dsrt::zero {
namespace {

class C10PipelineEvent final : public PipelineEvent {
 public:
  explicit C10PipelineEvent(const c10::Stream& stream) : event_(stream.device_type()) { event_.record(stream); }
  void hostWait() override { compat::hostWaitEvent(event_); }
  void block(const c10::Stream& stream) const { event_.block(stream); }

 private:
  c10::Event event_;
};

}  // namespace

C10PipelineStream C10PipelineStream::current(c10::Device device) {
  return C10PipelineStream(c10::impl::VirtualGuardImpl(device.type()).getStream(device));
}

C10PipelineStream C10PipelineStream::fromPool(c10::Device device) {
  return C10PipelineStream(c10::impl::VirtualGuardImpl(device.type()).getStreamFromGlobalPool(device));
}

void C10PipelineStream::enqueue(const std::function<void()>& issue) {
  c10::StreamGuard onStream(stream_);
  issue();
}

std::shared_ptr<PipelineEvent> C10PipelineStream::record() {
  return std::make_shared<C10PipelineEvent>(stream_);
}

void C10PipelineStream::waitFor(const PipelineEvent& event) {
  const auto* c10Event = dynamic_cast<const C10PipelineEvent*>(&event);
  TORCH_INTERNAL_ASSERT(c10Event != nullptr, "offload pipeline: an event of another kind of stream");
  c10Event->block(stream_);
}

}  // namespace dsrt::zero
