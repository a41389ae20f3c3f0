#pragma once
// The backend seam (docs/style.md §1 and §4, after gloo transport::Device and DeepSpeed's
// MultiNodeRunner): a Backend turns a WorldPlan into running ranks. `local` runs this node's ranks with
// runLocalJob; the multi-node backends (pdsh, openmpi, mpich, mvapich, impi, slurm, ssh, agent) live in
// launcher/backends/ and are registered in launcher/builtin_backends.cc.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/environment.h"
#include "launcher/options.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// What a backend runs for one node (or, for a single launcher command such as mpirun/srun, for all of
/// them: then `host` names the first host). Shown in --dry_run's "node_commands".
struct NodeCommand {
  std::string host;               ///< host the command is for
  std::vector<std::string> argv;  ///< the command, byte for byte
};

/// One more top-level key of --dry_run's JSON, from the backend (the agent backend's "agent_tree").
struct DryRunSection {
  std::string key;   ///< the JSON key
  std::string json;  ///< its value, serialized JSON
};

/// Everything a backend may need besides the plan. Owned by the caller; valid during the call.
struct LaunchContext {
  const Options& options;     ///< the parsed command line (launcher_args, ssh_port, tls_dir, ...)
  const EnvMap& launcherEnv;  ///< the launcher's own environment (base of local ranks' environment)
  int launcherPid = 0;        ///< dsrun's pid: names DeepSpeed's --save_pid file /tmp/<pid>.deepspeed
  bool firstHostChecked = false;  ///< prepareLaunch already checked the first host (beforeLaunch need not)
};

/// What Backend::prepareLaunch learned before the launch is planned (launcher_app.cc turns it into the
/// plan's Rendezvous).
struct LaunchPreparation {
  /// MASTER_ADDR when the plan infers it (draft.masterAddrHost set): the address, or empty to infer it as
  /// DeepSpeed does, the first word of `ssh FIRST_HOST hostname -I` (Machine::resolveMasterAddr).
  std::string masterAddr;
  /// MASTER_PORT as the backend's pre-flight checked or picked it (--master_port 0); nullopt: as planned.
  std::optional<int> masterPort;
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// The --launcher name ("local", "pdsh", ...).
  virtual std::string_view name() const = 0;

  /// Empty if usable here; otherwise why not, e.g. "'srun' not found in PATH".
  virtual std::optional<std::string> unavailableReason() const = 0;

  /// How to fix or bypass unavailability (the "hint:" line), or empty.
  virtual std::string unavailableHint() const { return {}; }

  /// A launch (never a dry run) of a multi-node job calls this once, after the availability check and before
  /// the ranks are planned: the backend checks that it can reach the first host when `draft.masterAddrHost`
  /// names it (so that the first error is about reaching the hosts, DeepSpeed's order: the passwordless-ssh
  /// check, then `ssh HOST hostname -I`) and says what it learned about the rendezvous. `draft` is the plan
  /// a dry run shows (MASTER_ADDR a placeholder when inferred). Throws dsrun::Error naming the host.
  virtual LaunchPreparation prepareLaunch(const WorldPlan& /*draft*/, const LaunchContext& /*ctx*/) { return {}; }

  /// How much of each rank the plan run() gets must hold (launcher_app.cc plans it so): every rank's command,
  /// unless the backend plans each one itself when it needs it (withCommand, world_plan.h).
  virtual RankDetail rankDetail(const WorldPlan& /*draft*/, const LaunchContext& /*ctx*/) const {
    return RankDetail::Commands;
  }

  /// The per-node commands this backend would run for `plan` (--dry_run); empty for `local`. Pure: runs
  /// nothing. May throw BackendUnavailable when it cannot even describe them.
  virtual std::vector<NodeCommand> nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const = 0;

  /// What else --dry_run shows of how this backend would launch `plan` (after "node_commands"); none by default.
  virtual std::vector<DryRunSection> dryRunSections(const WorldPlan& /*plan*/, const LaunchContext& /*ctx*/) const {
    return {};
  }

  /// Starts every rank of `plan` and waits for the job: returns 0 when all ranks exited 0, else the first
  /// failing rank's code (128+signal for a signal). Blocks the calling thread; SIGINT/SIGTERM/SIGHUP stop
  /// the job. Throws dsrun::Error when the job cannot start (nothing is left running then).
  virtual int run(const WorldPlan& plan, const LaunchContext& ctx) = 0;
};

}  // namespace dsrun::launcher
