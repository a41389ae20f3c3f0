#include "launcher/job_id.h"

#include <ctime>
#include <random>

#include "common/strings.h"

namespace dsrun::launcher {

std::string makeJobId(int pid) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &utc);
  std::random_device entropy;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(entropy()));
  return strCat("dsrun-", stamp, "-", pid, "-", suffix);
}

}  // namespace dsrun::launcher
