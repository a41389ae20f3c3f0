#pragma once
// Copies between host memory and a device, issued on a side stream so they overlap the compute stream's
// kernels, and ordered against it by events instead of host waits: a copy starts after the compute work
// enqueued before it was issued, compute work waits for a copy only where it uses the result
// (computeWaits), and the host waits only before it touches the host memory itself (hostWaitsAll).
// ZeRO-3 offload_param's parameter uploads (Stage3ParamGatherer) and ZeRO-2/3 offload's gradient downloads
// (HostGradDownload) are its two users (docs/gpu.md "Host synchronisation in a step").
//
// Device-generic: on a device it uses the device's current stream (read at every call, so a caller's stream
// context is honoured) and one stream of its pool; tests inject fake streams (offload_pipeline.h) and run the
// same ordering on CPU tensors. Not thread-safe.

#include "runtime/zero/offload_pipeline.h"

#include <c10/core/Device.h>

#include <functional>
#include <memory>

namespace dsrt::zero {

class C10PipelineStream;

class SideStreamCopies {
 public:
  /// On `device`'s streams (not the CPU).
  explicit SideStreamCopies(c10::Device device);
  /// Tests: `compute` and `side` instead (both outlive this object).
  SideStreamCopies(PipelineStream* compute, PipelineStream* side);
  /// Waits on the host for copies in flight: they may read or write memory freed after this.
  ~SideStreamCopies();
  SideStreamCopies(const SideStreamCopies&) = delete;
  SideStreamCopies& operator=(const SideStreamCopies&) = delete;

  /// Enqueues `copy` on the side stream after the compute work enqueued so far (so it may read what that
  /// work wrote and overwrite what it read); `copy` holds its tensors by value (a fake may run it later).
  /// Returns the point after it.
  std::shared_ptr<PipelineEvent> issue(const std::function<void()>& copy);
  /// Runs `launch` now with the side stream current: a collective it launches starts after the copies.
  void launchAfterCopies(const std::function<void()>& launch);
  /// Compute work enqueued from now on starts after `copied` (a point issue() returned). No host wait.
  void computeWaits(const PipelineEvent& copied);
  /// Compute work enqueued from now on starts after every copy issued so far; nothing when none was
  /// issued since the last call. No host wait.
  void computeWaitsAll();
  /// Blocks the host until every copy issued so far is done; nothing when none was issued since the
  /// last call (one wait however many copies).
  void hostWaitsAll();

 private:
  /// The compute stream now: the injected one, or the device's current stream.
  PipelineStream& compute();

  c10::Device device_;
  std::unique_ptr<C10PipelineStream> current_;  ///< device: the current stream, refreshed by compute()
  std::unique_ptr<C10PipelineStream> pooled_;   ///< device: the side stream, taken from the pool once
  PipelineStream* injectedCompute_ = nullptr;
  PipelineStream* side_ = nullptr;              ///< pooled_ or the injected side stream
  std::shared_ptr<PipelineEvent> last_;         ///< after the last copy issued
  bool computeBehind_ = false;  ///< a copy was issued since compute last waited for all of them
  bool hostBehind_ = false;     ///< a copy was issued since the host last waited for all of them
};

}  // namespace dsrt::zero
