#include "runtime/compat/event_compat.h"

#include <torch/version.h>

#include <thread>

namespace dsrt::compat {

void hostWaitEvent(const c10::Event& event) {
#if TORCH_VERSION_MAJOR >= 2
  event.synchronize();
#else
  // torch 1.13 (Debian's, CPU only: no device event is ever recorded there) has no host wait on an event.
  while (!event.query()) {
    std::this_thread::yield();
  }
#endif
}

}  // namespace dsrt::compat
