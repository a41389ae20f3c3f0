#pragma once
// LineSink: writes whole lines to one of dsrun's own descriptors (stdout or stderr), each line with
// its prefix in a single write(2) where the kernel allows, so concurrent writers do not split it.

#include <string>
#include <string_view>

namespace dsrun {

class LineSink {
 public:
  /// Writes to `fd`, which the caller keeps open and owns.
  explicit LineSink(int fd) : fd_(fd) {}

  /// Writes prefix + line + '\n'. Blocks while the reader is slow (backpressure reaches the ranks
  /// through their pipes). After EPIPE (reader gone; SIGPIPE must be ignored) lines are dropped.
  void write(std::string_view prefix, std::string_view line);
  /// Writes `bytes` as they are (whole lines, already terminated), with the same blocking and EPIPE rules.
  void writeBytes(std::string_view bytes);
  /// True once the reader went away and lines are being dropped.
  bool broken() const { return broken_; }

 private:
  int fd_;               ///< destination, not owned
  bool broken_ = false;  ///< see broken()
  std::string scratch_;  ///< reused line assembly buffer
};

}  // namespace dsrun
