#include "common/hang_watch.h"

#include <cerrno>
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/error.h"
#include "common/progress_file.h"
#include "common/strings.h"

namespace dsrun {

HangWatch::HangWatch(double timeoutS, const std::string& jobId) : timeoutS_(timeoutS) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = strCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/dsrun-progress.XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw IoError(pattern, "mkdtemp", errno, strCat("creating job ", jobId, "'s progress directory"));
  }
  dir_ = pattern;
}

HangWatch::~HangWatch() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string HangWatch::fileFor(int rank, double now) {
  ranks_[rank] = Rank{-1, now};
  return strCat(dir_, "/rank", rank);
}

void HangWatch::poll(double now) {
  for (auto& [rank, r] : ranks_) {
    const int64_t step = readProgressFile(strCat(dir_, "/rank", rank));
    if (step < 0 || step == r.step) continue;
    r.step = step;
    r.movedAt = now;
  }
}

std::vector<int> HangWatch::stuck(double now) const {
  std::vector<int> out;
  for (const auto& [rank, r] : ranks_) {
    if (r.step >= 0 && now - r.movedAt >= timeoutS_) out.push_back(rank);
  }
  return out;
}

int64_t HangWatch::step(int rank) const {
  const auto it = ranks_.find(rank);
  return it == ranks_.end() ? -1 : it->second.step;
}

double HangWatch::checkPeriodS() const { return std::min(1.0, timeoutS_ / 4); }

}  // namespace dsrun
