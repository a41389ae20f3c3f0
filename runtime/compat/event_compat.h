#pragma once
// c10::Event::synchronize() (a host wait for one event) exists from torch 2.x; torch 1.13 has query() only.
// The runtime asks this function instead of testing TORCH_VERSION itself.

#include <c10/core/Event.h>

namespace dsrt::compat {

/// Blocks the calling thread until the work recorded before `event` is done.
void hostWaitEvent(const c10::Event& event);

}  // namespace dsrt::compat
