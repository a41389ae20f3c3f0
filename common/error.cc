#include "common/error.h"

#include <cstring>

namespace dsrun {

ParseError::ParseError(const std::string& source, int line, const std::string& what)
    : Error(line > 0 ? strCat(source, ":", line, ": ", what) : strCat(source, ": ", what)) {}

IoError::IoError(const std::string& peer, const std::string& syscall, int err, const std::string& doing)
    : Error(strCat(peer.empty() ? "" : peer + ": ", syscall, ": ", std::strerror(err),
                   doing.empty() ? "" : " (" + doing + ")")),
      errno_(err) {}

BackendUnavailable::BackendUnavailable(const std::string& backend, const std::string& reason,
                                       const std::string& hint)
    : Error(strCat("backend '", backend, "' unavailable: ", reason, hint.empty() ? "" : "\n  hint: " + hint)) {}

namespace detail {
void throwCheckFailure(const char* file, int line, const char* cond, const std::string& msg) {
  const char* base = std::strrchr(file, '/');
  throw InternalError(strCat(base ? base + 1 : file, ":", line, ": check failed: ", cond,
                             msg.empty() ? "" : ": " + msg));
}
}  // namespace detail

}  // namespace dsrun
