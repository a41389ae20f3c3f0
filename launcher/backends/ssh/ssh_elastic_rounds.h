#pragma once
// SshElasticRounds: the ssh backend's side of elastic training (elastic_rounds.h). A probe is an ssh login
// to each host with the backend's settings (--ssh_config, --ssh_port), in parallel; its address is the peer
// address of that connection. A round is one SshJob in its elastic mode (ssh_job.h): heartbeats, lost and
// silent hosts, rescale. There is no mesh probe and no hang detection on ssh (docs/elastic_training.md).

#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "launcher/backends/ssh/ssh_job.h"
#include "launcher/elastic_training/elastic_rounds.h"

namespace dsrun::launcher {

class SshElasticRounds : public ElasticRounds {
 public:
  /// The remote line of every host of a round's plan (SshBackend::nodeCommands).
  using Commands = std::function<std::vector<NodeCommand>(const WorldPlan&)>;
  /// Where a host is reached (SshBackend::targetFor).
  using Target = std::function<SshTarget(const std::string&)>;

  /// `settings` is what every round's SshJob gets (elasticRound is set here).
  SshElasticRounds(Commands commands, Target target, SshJob::Settings settings)
      : commands_(std::move(commands)), target_(std::move(target)), settings_(std::move(settings)) {}
  /// Waits for the logins still under way (each ends within its timeout).
  ~SshElasticRounds() override;

  std::vector<HostProbe> probe(const std::vector<std::string>& hosts, std::chrono::milliseconds timeout,
                               const std::atomic<bool>* cancel) override;
  RoundOutcome runRound(const WorldPlan& plan, const RoundHooks& hooks) override;
  RoundWording wording() const override;

 private:
  Commands commands_;         ///< a round's remote lines
  Target target_;             ///< ssh settings per host
  SshJob::Settings settings_; ///< every round's settings, before the hooks
  /// A login on its own thread: a cancelled probe returns without waiting for it.
  struct Login {
    std::thread thread;                                    ///< runs the login
    std::shared_ptr<std::atomic<bool>> done;               ///< the thread has finished
  };
  std::mutex loginsMutex_;     ///< probe() runs on the controller's and the spare watcher's threads
  std::vector<Login> logins_;  ///< joined when done (next probe) or in the destructor
};

}  // namespace dsrun::launcher
