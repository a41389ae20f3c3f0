#include "runtime/zero/host_grad_download.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <utility>

namespace dsrt::zero {

HostGradDownload::HostGradDownload(std::unique_ptr<SideStreamCopies> copies, int64_t maxRunNumel)
    : copies_(std::move(copies)), maxRunNumel_(maxRunNumel) {
  TORCH_INTERNAL_ASSERT(copies_ != nullptr, "host gradient download: no streams");
}

void HostGradDownload::deliver(const at::Tensor& hostRun, const at::Tensor& averaged, bool accumulate) {
  TORCH_INTERNAL_ASSERT(hostRun.scalar_type() == at::kFloat && hostRun.numel() == averaged.numel() &&
                            averaged.numel() <= maxRunNumel_,
                        "host gradient download: a run of ", averaged.numel(), " elements (", averaged.scalar_type(),
                        ") into ", hostRun.numel(), " (", hostRun.scalar_type(), "), at most ", maxRunNumel_);
  const int64_t n = averaged.numel();
  at::Tensor scratch;
  if (accumulate || averaged.scalar_type() != at::kFloat) {
    if (!scratch_.defined()) {
      scratch_ = at::empty({maxRunNumel_}, averaged.options().dtype(at::kFloat));
    }
    scratch = scratch_.narrow(0, 0, n);
  }
  copies_->issue([hostRun, averaged, scratch, accumulate] {
    c10::AutoGradMode noGrad(false);
    if (!scratch.defined()) {
      hostRun.copy_(averaged, /*non_blocking=*/true);
      return;
    }
    if (accumulate) {
      // fp32 addition commutes bit for bit: scratch (the host's sum so far) + averaged is what the host's
      // hostRun.add_(averaged) computed.
      scratch.copy_(hostRun, /*non_blocking=*/true);
      scratch.add_(averaged);
    } else {
      scratch.copy_(averaged);
    }
    hostRun.copy_(scratch, /*non_blocking=*/true);
  });
}

}  // namespace dsrt::zero
