#pragma once
// The one exception the torch-free checkpoint code throws: a missing, truncated, corrupt or
// inconsistent checkpoint, or a failed system call while writing one. what() is one line that
// names the file: "<path>: <what was wrong>, got '<what was found>'" or "<path>: <syscall>: <strerror>",
// plus a second "  hint: ..." line where a load option fixes it (load_module_strict, load_module_only).
// Engine-level entry points (engine_checkpoint.h) rethrow it as c10::Error with the same text.

#include <stdexcept>
#include <string>

namespace dsrt::checkpoint {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dsrt::checkpoint
