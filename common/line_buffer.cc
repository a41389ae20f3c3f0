#include "common/line_buffer.h"

#include <algorithm>

namespace dsrun {

void LineBuffer::feed(std::string_view bytes, const Emit& emit) {
  // A line cut at exactly maxLine_ bytes must not produce an empty line when its '\n' arrives.
  if (cut_ && !bytes.empty() && bytes.front() == '\n') bytes.remove_prefix(1);
  if (!bytes.empty()) cut_ = false;
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      // Top up the partial line to maxLine_; a full one goes out as a piece of its own.
      size_t take = std::min(bytes.size(), maxLine_ - partial_.size());
      partial_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (partial_.size() == maxLine_) {
        emit(partial_);
        partial_.clear();
        cut_ = bytes.empty();
      }
      continue;
    }
    if (partial_.empty() && newline <= maxLine_) {
      emit(bytes.substr(0, newline));  // the common case: no copy
    } else {
      size_t take = std::min(newline, maxLine_ - partial_.size());
      partial_.append(bytes.substr(0, take));
      emit(partial_);
      partial_.clear();
      if (take < newline) {
        bytes.remove_prefix(take);
        continue;  // the rest of an overlong line is handled as new input
      }
    }
    bytes.remove_prefix(newline + 1);
  }
}

void LineBuffer::finish(const Emit& emit) {
  if (partial_.empty()) return;
  emit(partial_);
  partial_.clear();
}

}  // namespace dsrun
