#pragma once
// Times one engine collective for the comms logger (comms_log.h), from where it is issued to where it
// completes. Host-memory collectives complete on the backend's thread: the time is taken in their
// future's callback, so an overlapped bucket is not charged for the backward that ran while it was in
// flight. Works without a future (Gloo's send/recv) and device collectives (NCCL marks its future done
// at issue) are timed when the caller's wait() returns. With the log off a PendingComm is empty and
// every call on it is a null check.

#include <c10/util/intrusive_ptr.h>

#include <memory>

#include "runtime/comms/comms_log.h"

namespace at {
class Tensor;
}  // namespace at
namespace c10d {
class Work;
}  // namespace c10d

namespace dsrt::comms {

class PendingComm {
 public:
  /// Empty: times nothing.
  PendingComm() = default;

  /// Starts timing collective `op` whose input (what deepspeed.comm measures) is `input`, unless `log`
  /// is null or does not want `op`. Call before issuing the collective.
  static PendingComm start(const std::shared_ptr<CommsLog>& log, const char* op, const at::Tensor& input);
  /// The same for an input that is not one tensor (the pieces of a ZeRO-3 gather): `bytes` in all,
  /// `hostMemory` when they live on the CPU.
  static PendingComm start(const std::shared_ptr<CommsLog>& log, const char* op, int64_t bytes, bool hostMemory);

  /// The issued collective's work (call once per work; a group of point-to-point works is one
  /// collective, completed when the caller has waited for all of them).
  void watch(const c10::intrusive_ptr<c10d::Work>& work);

  /// After the caller waited for the collective: records it now unless a completion callback did.
  void waited();

 private:
  struct State;
  std::shared_ptr<State> state_;  ///< null when not timing; shared with the completion callback
};

}  // namespace dsrt::comms
