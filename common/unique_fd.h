#pragma once
// UniqueFd: owns one file descriptor and closes it when destroyed (move-only).

#include <unistd.h>

#include <utility>

namespace dsrun {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  /// Gives up ownership (e.g. to a boost::asio::posix::stream_descriptor) and returns the fd.
  int release() { return std::exchange(fd_, -1); }
  /// Closes the current fd (if any) and takes `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;  ///< the owned descriptor, -1 when empty
};

}  // namespace dsrun
