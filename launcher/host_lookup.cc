#include "launcher/host_lookup.h"

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/ssh_check.h"

namespace dsrun::launcher {
namespace {

std::string where(const std::string& host, const Hostfile* hostfile) {
  const HostEntry* entry = hostfile == nullptr ? nullptr : hostfile->find(host);
  if (entry == nullptr) return strCat("host '", host, "'");
  return strCat(hostfile->source, ":", entry->line, ": host '", host, "'");
}

}  // namespace

std::vector<std::string> hostsToResolve(const WorldPlan& plan, const Options& options) {
  std::vector<std::string> hosts;
  if (plan.multiNode) {
    if (options.launcher == "slurm") return hosts;
    for (const HostSlots& h : plan.elastic ? plan.elastic->candidates : plan.hosts) hosts.push_back(h.host);
  } else if (!plan.masterAddrHost.empty()) {
    hosts.push_back(plan.masterAddrHost);
  }
  return hosts;
}

bool reachedViaSsh(const Options& options) { return options.noSsh || options.launcher != "agent"; }

std::string unresolvedHostsMessage(const std::vector<UnresolvedHost>& unresolved, const Hostfile* hostfile) {
  DSRUN_CHECK(!unresolved.empty(), "no unresolved host to describe");
  std::string text = strCat(where(unresolved.front().host, hostfile), " cannot be resolved: ", unresolved.front().why);
  if (unresolved.size() > 1) {
    std::vector<std::string> others;
    for (size_t i = 1; i < unresolved.size(); ++i) others.push_back(where(unresolved[i].host, hostfile));
    text += strCat(" (also ", join(others, ", "), ")");
  }
  return strCat(text, "\n  hint: correct the name, add it to /etc/hosts or DNS, or leave it out with --exclude ",
                unresolved.front().host);
}

void checkHostsResolve(const WorldPlan& plan, const Options& options, const Hostfile* hostfile,
                       const EnvMap& launcherEnv, Machine& machine) {
  const std::vector<std::string> hosts = hostsToResolve(plan, options);
  if (hosts.empty()) return;
  const bool viaSsh = reachedViaSsh(options);
  const std::vector<std::string> sshOptions = viaSsh ? sshOptionsFor(options, launcherEnv) : std::vector<std::string>{};
  std::vector<UnresolvedHost> unresolved;
  for (const std::string& host : hosts) {
    if (std::optional<std::string> why = machine.hostLookupError(host, viaSsh, sshOptions)) {
      unresolved.push_back({host, *why});
      if (options.dryRun) {
        DSRUN_LOG(WARN) << where(host, hostfile) << " cannot be resolved: " << *why
                        << " (dry run: planned anyway; a launch would refuse it)";
      }
    }
  }
  if (!unresolved.empty() && !options.dryRun) throw ConfigError(unresolvedHostsMessage(unresolved, hostfile));
}

}  // namespace dsrun::launcher
