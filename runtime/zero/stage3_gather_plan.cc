#include "runtime/zero/stage3_gather_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dsrt::zero {

GatherPlan planGather(const PartitionPlan& plan, std::vector<int64_t> params) {
  std::sort(params.begin(), params.end());
  params.erase(std::unique(params.begin(), params.end()), params.end());
  GatherPlan out;
  out.pieces.resize(static_cast<size_t>(plan.worldSize));
  out.rankNumels.assign(static_cast<size_t>(plan.worldSize), 0);
  for (int64_t p : params) {
    if (p < 0 || p >= static_cast<int64_t>(plan.paramNumels.size())) {
      throw std::invalid_argument("planGather: parameter index outside [0, " +
                                  std::to_string(plan.paramNumels.size()) + "), got '" + std::to_string(p) + "'");
    }
    const int64_t begin = plan.paramOffsets[static_cast<size_t>(p)];
    const int64_t end = begin + plan.paramNumels[static_cast<size_t>(p)];
    out.numel += end - begin;
    // A parameter crosses partition boundaries: cut it at each one.
    for (int64_t lo = begin; lo < end;) {
      const int owner = plan.ownerOf(lo);
      const int64_t hi = std::min(end, plan.partitionEnd(owner));
      auto& rankNumel = out.rankNumels[static_cast<size_t>(owner)];
      out.pieces[static_cast<size_t>(owner)].push_back(
          GatherPiece{p, lo - begin, lo - plan.partitionBegin(owner), rankNumel, hi - lo});
      rankNumel += hi - lo;
      lo = hi;
    }
  }
  out.params = std::move(params);
  out.pieceNumel = out.rankNumels.empty() ? 0 : *std::max_element(out.rankNumels.begin(), out.rankNumels.end());
  return out;
}

}  // namespace dsrt::zero
