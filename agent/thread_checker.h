#pragma once
// ThreadChecker: asserts that a component is only touched from the thread that owns it (the
// agent's io_context thread), after Ray's ThreadChecker. Cheap enough to call in every handler.

#include <thread>

#include "common/error.h"

namespace dsrun::agent {

class ThreadChecker {
 public:
  /// Binds to the constructing thread.
  ThreadChecker() : owner_(std::this_thread::get_id()) {}

  /// True on the owning thread.
  bool isOnOwnerThread() const { return std::this_thread::get_id() == owner_; }

  /// Re-binds to the calling thread (e.g. an object built on one thread, then handed to the loop).
  void rebind() { owner_ = std::this_thread::get_id(); }

 private:
  std::thread::id owner_;  ///< the thread allowed to use the component
};

}  // namespace dsrun::agent

/// Throws InternalError if not called on the owner thread of `checker`.
#define DSRUN_CHECK_THREAD(checker) \
  DSRUN_CHECK((checker).isOnOwnerThread(), "called off the owning event-loop thread")
