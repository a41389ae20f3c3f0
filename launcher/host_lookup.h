#pragma once
// Before anything starts, every host a launch would reach must have an address: a typo in
// a hostfile is refused with its file and line instead of surfacing as one host's ssh error after the
// other hosts' ranks were started. A dry run only warns, so a cluster's job can be planned on a laptop.

#include <string>
#include <vector>

#include "launcher/machine.h"
#include "launcher/options.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// A host without an address and why (the resolver's words).
struct UnresolvedHost {
  std::string host;  ///< as written in the hostfile
  std::string why;   ///< e.g. "Name or service not known"
};

/// The hosts of `plan` a launch would reach by name, and whether through ssh's configuration: every host of a
/// multi-node job (the elastic candidates for an elastic one), or the master host --no_ssh infers MASTER_ADDR
/// from. Slurm jobs name Slurm nodes, which the Slurm backend checks against `sinfo`, so none for them.
std::vector<std::string> hostsToResolve(const WorldPlan& plan, const Options& options);

/// True when `options` reach hosts through OpenSSH (pdsh, ssh, the MPI launchers, --no_ssh's address lookup),
/// whose configuration may alias a name.
bool reachedViaSsh(const Options& options);

/// "HOSTFILE:LINE: cannot resolve host 'H': WHY" for the first of `unresolved` (all of them named), with a hint.
/// `hostfile` is where the names came from (nullptr: the implicit localhost of local mode).
std::string unresolvedHostsMessage(const std::vector<UnresolvedHost>& unresolved, const Hostfile* hostfile);

/// Looks up every host hostsToResolve() names on `machine`. A launch throws ConfigError (exit 2) with
/// unresolvedHostsMessage(); a dry run (options.dryRun) logs one warning per host and returns.
void checkHostsResolve(const WorldPlan& plan, const Options& options, const Hostfile* hostfile,
                       const EnvMap& launcherEnv, Machine& machine);

}  // namespace dsrun::launcher
