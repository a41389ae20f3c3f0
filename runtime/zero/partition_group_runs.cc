#include "runtime/zero/partition_group_runs.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace dsrt::zero {

std::vector<optim::GroupRun> partitionGroupRuns(const PartitionPlan& plan, int rank,
                                                const std::vector<int>& groupOfParam) {
  if (groupOfParam.size() != plan.paramNumels.size()) {
    throw std::invalid_argument("param groups: " + std::to_string(groupOfParam.size()) + " group indices for " +
                                std::to_string(plan.paramNumels.size()) + " parameters");
  }
  const int64_t begin = plan.partitionBegin(rank);
  std::vector<optim::ParamSpan> spans;
  for (const ParamPiece& piece : plan.piecesOf(rank)) {
    spans.push_back({piece.flatOffset - begin, piece.numel, groupOfParam[static_cast<size_t>(piece.param)]});
  }
  return optim::groupRunsOf(std::move(spans), plan.partitionNumel);
}

}  // namespace dsrt::zero
