#pragma once
// Which agents each agent probes in the mesh probe (launcher/backends/agent/agent_mesh_probe.h, docs/agent.md
// "Which pairs the mesh probe covers"): all pairs up to kMeshAllPairsUpTo hosts, beyond that a structured
// set of O(log N) peers per host, so that the probe costs O(N log N) connections instead of N x (N-1).

#include <cstddef>
#include <vector>

namespace dsrun::launcher {

/// Up to this many hosts every host probes every other (16 x 15 = 240 connections; bench/agent_scale.sh).
inline constexpr size_t kMeshAllPairsUpTo = 16;

/// The hosts (indices into the job's host order, 0 = the first host, rank 0's) that host `index` of `count`
/// probes, ascending, never `index` itself. Above kMeshAllPairsUpTo: the hosts at distance 1, 2, 4, ...
/// (< count) after it in host order, wrapping, plus host 0; at most ceil(log2(count)) + 1 of them. Pure.
std::vector<size_t> meshProbePeers(size_t index, size_t count);

/// The number of (from, to) pairs meshProbePeers gives over all `count` hosts. Pure.
size_t meshProbePairCount(size_t count);

}  // namespace dsrun::launcher
