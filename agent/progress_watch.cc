#include "agent/progress_watch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"

namespace dsrun::agent {


ProgressWatch::ProgressWatch(boost::asio::io_context& io, const std::string& jobId, std::chrono::milliseconds interval,
                             OnStep onStep)
    : timer_(io), interval_(interval), onStep_(std::move(onStep)) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = strCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/dsrun-progress.XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw IoError(pattern, "mkdtemp", errno, strCat("creating job ", jobId, "'s progress directory"));
  }
  dir_ = pattern;
  arm();
}

ProgressWatch::~ProgressWatch() {
  timer_.cancel();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string ProgressWatch::fileFor(int rank) {
  lastStep_.emplace(rank, -1);
  return strCat(dir_, "/rank", rank);
}

void ProgressWatch::arm() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    poll();
    arm();
  });
}

void ProgressWatch::poll() {
  for (auto& [rank, last] : lastStep_) {
    const int64_t step = readProgressFile(strCat(dir_, "/rank", rank));
    if (step < 0 || step == last) continue;
    last = step;
    onStep_(rank, step);
  }
}

}  // namespace dsrun::agent
