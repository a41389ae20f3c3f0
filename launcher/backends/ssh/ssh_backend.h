#pragma once
// ssh: one libssh session per host, opened in parallel and configured like OpenSSH's client
// (--ssh_config, default ~/.ssh/config; --ssh_port). Each session runs the same remote shell line pdsh
// would (exports, cd, dsrun-launch with that node's --node_rank) plus --watch_stdin, so closing the
// channel, or dsrun dying, stops that node's ranks. The job itself is an SshJob (ssh_job.h); with
// --elastic_training the elastic controller (elastic_job.h) runs a series of them (ssh_elastic_rounds.h),
// and each host's line also gets the restart counter and --stdin_timeout_ms.

#include "launcher/backends/ssh/ssh_session.h"
#include "launcher/backend.h"
#include "launcher/backends/backend_site.h"

namespace dsrun::launcher {

class SshBackend : public Backend {
 public:
  explicit SshBackend(BackendSite site) : site_(std::move(site)) {}

  std::string_view name() const override { return "ssh"; }
  std::optional<std::string> unavailableReason() const override { return std::nullopt; }
  /// One entry per host: the remote shell words that host runs.
  std::vector<NodeCommand> nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const override;
  int run(const WorldPlan& plan, const LaunchContext& ctx) override;
  /// When MASTER_ADDR is inferred (draft.masterAddrHost): connects to that host with the backend's own
  /// settings (its passwordless-ssh check) and runs `hostname -I` there: MASTER_ADDR without OpenSSH, and an
  /// ssh error first if the host is unreachable. Throws TimeoutError when `hostname -I` takes over 30 s.
  LaunchPreparation prepareLaunch(const WorldPlan& draft, const LaunchContext& ctx) override;

  /// Where each host is reached (config file, port).
  static SshTarget targetFor(const std::string& host, const Options& options);

 private:
  BackendSite site_;  ///< dsrun-launch path and launch directory
};

}  // namespace dsrun::launcher
