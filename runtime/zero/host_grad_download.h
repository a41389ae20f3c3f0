#pragma once
// ZeRO-2/3 offload on an accelerator: each bucket's averaged gradient run goes from the device into the fp32
// gradient partition in host memory (MasterPartition::hostGrad, page-locked with pin_memory) during
// backward, as DeepSpeed's copy_(..., non_blocking=True) into its pinned fp32 gradient buffer does. The copy
// runs on a side stream after the reduction, so backward is never held up by a host wait; the host waits
// once, when it reads the gradients (norm, overflow check, the CPU optimizer step) or zeroes them, as
// DeepSpeed's step() waits for its offload copies.
//
// A 16-bit run is converted to fp32 on the device first (ATen would otherwise stage a D2H copy with a dtype
// change through unpinned host memory, synchronously); a run that accumulates (a later micro-step of an
// accumulation window) is uploaded, summed on the device and downloaded again, DeepSpeed's
// async_accumulate_grad_in_cpu_via_gpu, with the same fp32 additions the host would do. Not thread-safe.

#include "runtime/zero/side_stream_copies.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

namespace dsrt::zero {

class HostGradDownload {
 public:
  /// Elements of the fp32 device scratch (16 MiB): a longer run is converted and copied in pieces of this
  /// size, in order on the side stream, so the scratch never costs a bucket's worth of device memory.
  static constexpr int64_t kScratchNumel = int64_t{1} << 22;

  /// `copies`: the side stream to use; `maxRunNumel`: the longest run delivered; `scratchNumel` (tests: a
  /// small one cuts short runs into pieces too) must be >= 1.
  HostGradDownload(std::unique_ptr<SideStreamCopies> copies, int64_t maxRunNumel,
                   int64_t scratchNumel = kScratchNumel);
  /// Waits on the host for the copies in flight before the scratch goes back to the allocator.
  ~HostGradDownload();
  HostGradDownload(const HostGradDownload&) = delete;
  HostGradDownload& operator=(const HostGradDownload&) = delete;

  /// Issues hostRun = averaged (accumulate: hostRun + averaged) after the compute work enqueued so far.
  /// hostRun: fp32 host memory; averaged: same numel, fp32/fp16/bf16 on the device. Returns at once: the
  /// compute stream must not overwrite `averaged` before beforeReuse(), the host must not touch hostRun
  /// before awaitHost().
  void deliver(const at::Tensor& hostRun, const at::Tensor& averaged, bool accumulate);
  /// Before compute work that overwrites a buffer an earlier deliver() read (a recycled staging or receive
  /// buffer): that work starts after the downloads issued so far. No host wait.
  void beforeReuse() { copies_->computeWaitsAll(); }
  /// Blocks until every run delivered so far is in host memory.
  void awaitHost() { copies_->hostWaitsAll(); }

 private:
  std::unique_ptr<SideStreamCopies> copies_;
  int64_t maxRunNumel_;
  int64_t scratchNumel_;
  /// fp32 on the device, min(maxRunNumel_, scratchNumel_) long, allocated on first need and never
  /// replaced: only the side stream uses it, in order, so one buffer serves every piece of every delivery.
  /// It is allocated on the compute stream (the caching allocator files it there) and never
  /// recordStream'ed, so it must outlive the side stream's last use: see the destructor.
  at::Tensor scratch_;
};

}  // namespace dsrt::zero
