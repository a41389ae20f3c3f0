#include "launcher/backends/command/mpi_rules.h"

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

void rejectResourceFilters(const std::string& backend, const Options& options) {
  if (!options.include.empty() || !options.exclude.empty()) {
    throw ConfigError(strCat(backend, " backend does not support worker include/exclusion (--include/--exclude)",
                             "\n  hint: write the hosts to use into the hostfile instead"));
  }
  if (options.numNodes != -1 || options.numGpus != -1) {
    throw ConfigError(strCat(backend, " backend does not support limiting num nodes/gpus (--num_nodes/--num_gpus)",
                             "\n  hint: write the hosts and slots to use into the hostfile instead"));
  }
}

int sameSlotsPerNode(const WorldPlan& plan, const std::string& what) {
  DSRUN_CHECK(!plan.hosts.empty(), "a plan without hosts");
  const size_t perNode = plan.hosts.front().slots.size();
  std::vector<std::string> counts;
  bool same = true;
  for (const HostSlots& host : plan.hosts) {
    same = same && host.slots.size() == perNode;
    counts.push_back(strCat(host.host, ": ", host.slots.size()));
  }
  if (!same) {
    throw ConfigError(strCat(what, " requires same number of devices per node, got ", join(counts, ", ")));
  }
  return static_cast<int>(perNode);
}

std::string hostList(const WorldPlan& plan) {
  std::vector<std::string> names;
  for (const HostSlots& host : plan.hosts) names.push_back(host.host);
  return join(names, ",");
}

}  // namespace dsrun::launcher
