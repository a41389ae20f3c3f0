#pragma once
// How many missed agent beats make a host lost, for a job of this size. The heartbeat budget (beat x
// misses, 500 ms x 5 by default) is checked on both ends: dsrun gives up a host that is silent that long,
// and each agent stops its ranks when dsrun is. dsrun's one loop works through every node's and every
// rank's launch events; at 256 nodes x 8 ranks on a loaded 2-core machine that took longer than 2.5 s and
// jobs failed with every host alive (docs/benchmarks.md "Launch at scale"). So the budget never falls
// below a margin over dsrun's own CPU for one pass over the job's events, measured per node and per rank
// (bench/launch_sim_costs.json); below about 170 nodes of 8 ranks the default 5 misses stand unchanged.

#include <cstddef>
#include <cstdint>

namespace dsrun::launcher {

/// dsrun's CPU per node (TLS handshake, Hello/Welcome, launch request) and per rank (its launch entry
/// and two events), measured on the 2-core development machine (bench/launch_sim_calibrate.py).
constexpr double kDsrunUsPerNode = 2861;
constexpr double kDsrunUsPerRank = 97;
/// The budget is at least this many times that CPU: the loop may get a quarter of a core.
constexpr double kSilenceMargin = 4;

/// The missed beats to use: `misses`, or more when beatMs x misses is below the floor for `nodes`
/// hosts and `ranks` ranks. Pure.
int silentBeatsFor(int misses, uint32_t beatMs, size_t nodes, size_t ranks);

}  // namespace dsrun::launcher
