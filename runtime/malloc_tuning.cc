#include "runtime/malloc_tuning.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace dsrt {

namespace {

constexpr int kMmapThreshold = 64 << 20;
constexpr int kTrimThreshold = 256 << 20;

bool userChoseMalloc() {
  const char* off = std::getenv("DSRT_MALLOC_TUNING");
  if (off != nullptr && std::strcmp(off, "0") == 0) return true;
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr || std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr &&
         (std::strstr(tunables, "malloc.mmap_threshold") != nullptr || std::strstr(tunables, "malloc.trim_threshold") != nullptr);
}

}  // namespace

bool tuneMallocForTraining() {
  static std::once_flag once;
  static bool tuned = false;
  std::call_once(once, [] {
    if (userChoseMalloc()) return;
    tuned = ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
  });
  return tuned;
}

}  // namespace dsrt
