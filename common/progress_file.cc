#include "common/progress_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace dsrun {

int64_t readProgressFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[32] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(buf, &end, 10);
  if (end == buf || errno != 0 || value < 0) return -1;
  for (; *end != '\0'; ++end) {
    if (*end != ' ' && *end != '\n') return -1;  // half-written
  }
  return value;
}

}  // namespace dsrun
