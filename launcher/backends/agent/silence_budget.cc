#include "launcher/backends/agent/silence_budget.h"

#include <algorithm>
#include <cmath>

namespace dsrun::launcher {

int silentBeatsFor(int misses, uint32_t beatMs, size_t nodes, size_t ranks) {
  const double floorMs =
      kSilenceMargin * (static_cast<double>(nodes) * kDsrunUsPerNode + static_cast<double>(ranks) * kDsrunUsPerRank) /
      1000.0;
  const int needed = static_cast<int>(std::ceil(floorMs / std::max<uint32_t>(beatMs, 1)));
  return std::max(misses, needed);
}

}  // namespace dsrun::launcher
