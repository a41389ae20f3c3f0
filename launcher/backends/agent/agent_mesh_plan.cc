#include "launcher/backends/agent/agent_mesh_plan.h"

#include <algorithm>

#include "common/error.h"

namespace dsrun::launcher {

std::vector<size_t> meshProbePeers(size_t index, size_t count) {
  DSRUN_CHECK(index < count, "host ", index, " of ", count);
  std::vector<size_t> peers;
  if (count <= kMeshAllPairsUpTo) {
    for (size_t j = 0; j < count; ++j) {
      if (j != index) peers.push_back(j);
    }
    return peers;
  }
  // Distances 1, 2, 4, ...: distance 1 is the ring in host order (the inter-host hop of a ring collective
  // over ranks in host order), and the doubling distances are the dissemination pattern, so every host
  // reaches every other over at most ceil(log2 N) probed hops: any split of the hosts into two groups
  // has probed pairs across it in both directions.
  for (size_t distance = 1; distance < count; distance *= 2) peers.push_back((index + distance) % count);
  // Host 0: every rank's first connection goes there (MASTER_ADDR's c10d store, unless --master_addr says
  // otherwise), so a host that cannot reach it is named whatever else it reaches.
  if (index != 0) peers.push_back(0);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

size_t meshProbePairCount(size_t count) {
  size_t pairs = 0;
  for (size_t i = 0; i < count; ++i) pairs += meshProbePeers(i, count).size();
  return pairs;
}

}  // namespace dsrun::launcher
