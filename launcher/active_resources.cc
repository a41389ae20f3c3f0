#include "launcher/active_resources.h"

#include <algorithm>
#include <numeric>

#include "common/env_contract.h"
#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

std::vector<int> firstSlots(int count) {
  std::vector<int> slots(static_cast<size_t>(count));
  std::iota(slots.begin(), slots.end(), 0);
  return slots;
}

std::string hostList(const ResourcePool& pool) {
  std::vector<std::string> names;
  for (const auto& h : pool) names.push_back(h.host);
  return join(names, ", ");
}

}  // namespace

ActiveResources resolveActiveResources(const Options& options, const std::optional<Hostfile>& hostfile,
                                       int gpuCount, const EnvMap& launcherEnv) {
  ActiveResources result;
  result.fromHostfile = hostfile.has_value();
  std::string include = options.include;
  std::string includeFlag = "--include";

  // runner.py: without a hostfile, CUDA_VISIBLE_DEVICES picks the local GPUs unless the user selected
  // resources explicitly.
  auto visible = launcherEnv.find(kEnvCudaVisibleDevices);
  if (!hostfile && visible != launcherEnv.end() && !visible->second.empty()) {
    const std::string detected = strCat("detected ", kEnvCudaVisibleDevices, "=", visible->second);
    if (!options.include.empty() || !options.exclude.empty() || options.numNodes > 1 || options.numGpus > 0) {
      result.notes.push_back(detected + " but ignoring it because --include/--exclude/--num_gpus/--num_nodes "
                                        "was given");
    } else {
      include = strCat(kLocalHost, ":", visible->second);
      includeFlag = kEnvCudaVisibleDevices;
      result.notes.push_back(detected + ": using --include=" + include);
    }
  }

  if ((options.numNodes >= 0 || options.numGpus >= 0) && (!options.include.empty() || !options.exclude.empty())) {
    throw ConfigError(strCat(options.numNodes >= 0 ? "--num_nodes" : "--num_gpus", " cannot be combined with ",
                             options.include.empty() ? "--exclude" : "--include",
                             "\n  hint: select resources either by count or by name"));
  }

  ResourcePool pool;
  std::string poolSource;
  if (hostfile) {
    for (const HostEntry& entry : hostfile->entries) pool.push_back(HostSlots{entry.name, firstSlots(entry.slots)});
    poolSource = "in " + hostfile->source;
  } else {
    int slots = options.numGpus > 0 ? options.numGpus : std::max(gpuCount, 1);
    if (gpuCount == 0 && !options.include.empty()) {
      // Without GPUs a slot is only a rank's number, as with --num_gpus N: `--include localhost:0,1` asks
      // for two ranks, and is not refused for naming slot 1 of a one-slot machine.
      for (const HostSlots& spec : parseNodeSpecs(options.include, "--include")) {
        for (int slot : spec.slots) slots = std::max(slots, slot + 1);
      }
    }
    pool.push_back(HostSlots{kLocalHost, firstSlots(slots)});
    poolSource = "available without a hostfile";
    if (options.numNodes > 1) {
      throw ConfigError(strCat("--num_nodes ", options.numNodes, ": no hostfile, so only this machine is available",
                               "\n  hint: give the hosts with -H/--hostfile (default ", kDefaultHostfile, ")"));
    }
  }

  ResourcePool active = applyResourceFilter(pool, include, options.exclude, poolSource, includeFlag);
  if (active.empty()) {
    throw ConfigError(strCat("--exclude '", options.exclude, "' leaves no slot to run on (hosts: ", hostList(pool), ")"));
  }

  if (options.numNodes > 0) {
    if (options.numNodes > static_cast<int>(active.size())) {
      result.notes.push_back(strCat("--num_nodes ", options.numNodes, ": only ", active.size(),
                                    " host(s) available, using all of them"));
    } else {
      active.resize(static_cast<size_t>(options.numNodes));
    }
  }
  if (options.numGpus > 0) {
    for (HostSlots& host : active) {
      const HostEntry* entry = hostfile ? hostfile->find(host.host) : nullptr;
      if (entry != nullptr && options.numGpus > entry->slots) {
        throw ConfigError(strCat("--num_gpus ", options.numGpus, ": host '", host.host, "' has only ", entry->slots,
                                 " slot(s) in ", hostfile->source, ":", entry->line));
      }
      host.slots = firstSlots(options.numGpus);
    }
  }
  result.hosts = std::move(active);
  return result;
}

}  // namespace dsrun::launcher
