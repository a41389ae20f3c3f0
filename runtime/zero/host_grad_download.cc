#include "runtime/zero/host_grad_download.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace dsrt::zero {

HostGradDownload::HostGradDownload(std::unique_ptr<SideStreamCopies> copies, int64_t maxRunNumel,
                                   int64_t scratchNumel)
    : copies_(std::move(copies)), maxRunNumel_(maxRunNumel), scratchNumel_(scratchNumel) {
  TORCH_INTERNAL_ASSERT(copies_ != nullptr && scratchNumel_ >= 1, "host gradient download: no streams or no scratch");
}

HostGradDownload::~HostGradDownload() {
  // Members die in reverse order: scratch_ before copies_, whose destructor waits too, but too late.
  // scratch_ was allocated on the compute stream and is read and written only on the side stream;
  // freed while the side stream's last conversion or download still uses it, the caching allocator
  // would hand it to the compute stream's next allocation under that copy (silent corruption, which
  // the CPU tests cannot show: their fake streams keep it alive in the deferred copy). So wait first.
  try {
    copies_->hostWaitsAll();
  } catch (const std::exception&) {  // already failing (a device error); a destructor must not throw
  }
}

void HostGradDownload::deliver(const at::Tensor& hostRun, const at::Tensor& averaged, bool accumulate) {
  TORCH_INTERNAL_ASSERT(hostRun.scalar_type() == at::kFloat && hostRun.numel() == averaged.numel() &&
                            averaged.numel() <= maxRunNumel_,
                        "host gradient download: a run of ", averaged.numel(), " elements (", averaged.scalar_type(),
                        ") into ", hostRun.numel(), " (", hostRun.scalar_type(), "), at most ", maxRunNumel_);
  at::Tensor scratch;
  if (accumulate || averaged.scalar_type() != at::kFloat) {
    if (!scratch_.defined()) {
      scratch_ = at::empty({std::max<int64_t>(1, std::min(maxRunNumel_, scratchNumel_))},
                           averaged.options().dtype(at::kFloat));
    }
    scratch = scratch_;
  }
  copies_->issue([hostRun, averaged, scratch, accumulate] {
    c10::AutoGradMode noGrad(false);
    if (!scratch.defined()) {
      hostRun.copy_(averaged, /*non_blocking=*/true);
      return;
    }
    const int64_t n = averaged.numel();
    for (int64_t begin = 0; begin < n; begin += scratch.numel()) {
      const int64_t len = std::min(scratch.numel(), n - begin);
      at::Tensor part = scratch.narrow(0, 0, len);
      at::Tensor host = hostRun.narrow(0, begin, len);
      if (accumulate) {
        // fp32 addition commutes bit for bit: part (the host's sum so far) + averaged is what the host's
        // hostRun.add_(averaged) computed.
        part.copy_(host, /*non_blocking=*/true);
        part.add_(averaged.narrow(0, begin, len));
      } else {
        part.copy_(averaged.narrow(0, begin, len));
      }
      host.copy_(part, /*non_blocking=*/true);
    }
  });
}

}  // namespace dsrt::zero
