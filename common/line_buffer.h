#pragma once
// LineBuffer: turns one byte stream (a rank's stdout or stderr) into whole lines with bounded memory,
// so lines from different ranks are forwarded whole and never interleave mid-line.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace dsrun {

class LineBuffer {
 public:
  /// Receives one line without its '\n'.
  using Emit = std::function<void(std::string_view line)>;

  /// Lines longer than `maxLine` bytes are emitted in pieces of `maxLine` bytes (memory stays bounded).
  explicit LineBuffer(size_t maxLine = 64 * 1024) : maxLine_(maxLine) {}

  /// Appends `bytes` and emits every line they complete.
  void feed(std::string_view bytes, const Emit& emit);
  /// Emits the unterminated rest, if any, as a last line (at end of stream).
  void finish(const Emit& emit);
  /// Bytes held back waiting for their '\n'.
  size_t pending() const { return partial_.size(); }

 private:
  size_t maxLine_;       ///< longest line held back
  std::string partial_;  ///< start of the current line
  bool cut_ = false;     ///< the last input ended exactly where a maxLine_ piece was cut
};

}  // namespace dsrun
