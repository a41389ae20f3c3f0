#include "runtime/comms/pending_comm.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <string>

namespace dsrt::comms {

struct PendingComm::State {
  std::shared_ptr<CommsLog> log;
  std::string op;
  int64_t bytes = 0;
  bool hostMemory = false;
  std::chrono::steady_clock::time_point issued = std::chrono::steady_clock::now();
  std::atomic<bool> recorded{false};

  void finish() {
    if (recorded.exchange(true)) {
      return;
    }
    const std::chrono::duration<double, std::milli> latency = std::chrono::steady_clock::now() - issued;
    log->record(CommRecord{op, bytes, latency.count()});
  }
};

PendingComm PendingComm::start(const std::shared_ptr<CommsLog>& log, const char* op, const at::Tensor& input) {
  if (!log || !log->wants(op)) {
    return PendingComm();
  }
  return start(log, op, static_cast<int64_t>(input.nbytes()), input.device().is_cpu());
}

PendingComm PendingComm::start(const std::shared_ptr<CommsLog>& log, const char* op, int64_t bytes, bool hostMemory) {
  PendingComm p;
  if (!log || !log->wants(op)) {
    return p;
  }
  p.state_ = std::make_shared<State>();
  p.state_->log = log;
  p.state_->op = op;
  p.state_->bytes = bytes;
  p.state_->hostMemory = hostMemory;
  return p;
}

void PendingComm::watch(const c10::intrusive_ptr<c10d::Work>& work) {
  if (!state_ || !state_->hostMemory || !work) {
    return;
  }
  c10::intrusive_ptr<c10::ivalue::Future> future;
  try {
    future = work->getFuture();
  } catch (const c10::Error&) {
    return;  // Gloo's send/recv works have no future: waited() times them
  }
  std::shared_ptr<State> state = state_;
  future->addCallback([state](c10::ivalue::Future&) { state->finish(); });
}

void PendingComm::waited() {
  if (state_) {
    state_->finish();
  }
}

}  // namespace dsrt::comms
