#include "launcher/elastic_training/elastic_job.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/env_contract.h"
#include "common/error.h"
#include "common/exit_status.h"
#include "common/logging.h"
#include "common/strings.h"
#include "elastic/compute_elastic_config.h"
#include "launcher/elastic_training/elastic_membership.h"
#include "launcher/resource_spec.h"
#include "launcher/torchrun_env.h"

namespace dsrun::launcher {

namespace {

using Clock = std::chrono::steady_clock;

/// A probe answers within this or counts as "not answering" for this world (a handshake takes ms).
constexpr auto kProbeTimeout = std::chrono::milliseconds(2000);
/// While the job runs, how often the hosts outside the world are probed.
constexpr auto kSparePeriod = std::chrono::milliseconds(2000);
/// Below the minimum, how often the candidates are probed again.
constexpr auto kWaitPeriod = std::chrono::milliseconds(1000);
/// MASTER_PORT of round r is --master_port + r % kPortSpan: a port no rank of an earlier round may hold.
constexpr int kPortSpan = 64;

volatile std::sig_atomic_t gSignal = 0;

void onSignal(int signal) {
  if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
    if (gSignal == 0) gSignal = signal;
  }
  // SIGUSR1/SIGUSR2 between worlds: no rank is running to receive them.
}

/// Between worlds dsrun itself handles the signals (each round installs and removes its own).
void installSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) ::sigaction(s, &sa, nullptr);
}

void say(const std::string& line) {
  const std::string text = line + "\n";
  const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", s);
  return buf;
}

std::vector<std::string> hostNames(const ResourcePool& pool) {
  std::vector<std::string> out;
  for (const HostSlots& h : pool) out.push_back(h.host);
  return out;
}

int slotCount(const ResourcePool& pool) {
  int n = 0;
  for (const HostSlots& h : pool) n += static_cast<int>(h.slots.size());
  return n;
}

std::vector<std::string> minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const std::string& x : a) {
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  }
  return out;
}

std::string listOrNone(const std::vector<std::string>& hosts) { return hosts.empty() ? "none" : join(hosts, ", "); }

/// Probes the hosts outside the running world on its own thread and raises wanted() once a larger world
/// could be formed (a started or recovered host): the controller then ends the round at once.
class SpareWatcher {
 public:
  SpareWatcher(ElasticRounds& rounds, const ElasticMembership& membership, ResourcePool world,
               std::function<double()> now)
      : rounds_(rounds), membership_(membership), world_(std::move(world)), now_(std::move(now)) {
    if (static_cast<int>(world_.size()) < membership_.maxNodes()) thread_ = std::thread([this] { loop(); });
  }
  ~SpareWatcher() { stop(); }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cancel_ = true;
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool wanted() const { return wanted_.load(); }

 private:
  void loop() {
    const std::vector<std::string> inWorld = hostNames(world_);
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (wake_.wait_for(lock, kSparePeriod, [this] { return stopping_; })) return;
      }
      std::vector<std::string> outside;
      for (const HostSlots& c : membership_.candidates()) {
        if (std::find(inWorld.begin(), inWorld.end(), c.host) == inWorld.end() && membership_.usable(c.host, now_())) {
          outside.push_back(c.host);
        }
      }
      if (outside.empty()) continue;
      std::set<std::string> answering(inWorld.begin(), inWorld.end());
      for (const HostProbe& p : rounds_.probe(outside, kProbeTimeout, &cancel_)) {
        if (p.ok) answering.insert(p.host);
      }
      const std::optional<ResourcePool> next = membership_.choose(answering, now_());
      if (next && next->size() > world_.size()) {
        wanted_ = true;
        return;
      }
    }
  }

  ElasticRounds& rounds_;
  const ElasticMembership& membership_;  ///< not changed while a round runs
  ResourcePool world_;
  std::function<double()> now_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> wanted_{false};
};

/// The ds_config the script is given (--deepspeed_config PATH or =PATH, DeepSpeed's argument), if any.
std::optional<std::string> dsConfigPath(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    for (const char* flag : {"--deepspeed_config", "--deepscale_config"}) {
      const std::string f = flag;
      if (args[i] == f && i + 1 < args.size()) return args[i + 1];
      if (startsWith(args[i], f + "=")) return args[i].substr(f.size() + 1);
    }
  }
  return std::nullopt;
}

/// With an enabled `elasticity` block in the script's ds_config, the world sizes (GPU counts) that keep its
/// batch (DeepSpeed's compute_elastic_config, the runtime's own code); empty: any size.
std::vector<int> validWorldSizes(const Options& options) {
  const std::optional<std::string> path = dsConfigPath(options.userArgs);
  if (!path) return {};
  std::ifstream in(*path);
  nlohmann::json config;
  try {
    if (!in) throw std::runtime_error("cannot open it");
    config = nlohmann::json::parse(in, nullptr, true, true);
  } catch (const std::exception& e) {
    DSRUN_LOG(WARN) << "elastic: cannot read the script's --deepspeed_config " << *path << " (" << e.what()
                    << "); the world size is not restricted to its elasticity block";
    return {};
  }
  if (!config.is_object() || !config.contains("elasticity") || !config["elasticity"].is_object() ||
      !config["elasticity"].value("enabled", false)) {
    return {};
  }
  try {
    const elastic::ElasticResult r = elastic::computeElasticConfig(config, 0, std::nullopt, *path);
    std::vector<int> sizes;
    if (r.validGpus) {
      for (long long n : *r.validGpus) sizes.push_back(static_cast<int>(n));
    }
    DSRUN_LOG(INFO) << "elastic: " << *path << "'s elasticity block allows world sizes " << formatRangeList(sizes)
                    << " (global batch " << r.finalBatchSize << ")";
    return sizes;
  } catch (const std::invalid_argument& e) {
    throw ConfigError(strCat("--elastic_training: the elasticity block of ", *path, ": ", e.what()));
  }
}

}  // namespace

ElasticJob::ElasticJob(const WorldPlan& plan, const Options& options, ElasticRounds& rounds)
    : plan_(plan), options_(options), rounds_(rounds), wording_(rounds.wording()) {
  DSRUN_CHECK(plan_.elastic.has_value(), "ElasticJob needs an elastic plan");
}

WorldPlan ElasticJob::planRound(const ResourcePool& world, const std::vector<HostProbe>& probes, int round,
                                int masterPort) const {
  WorldPlan p = plan_;
  p.hosts = world;
  p.jobId = round == 0 ? plan_.jobId : strCat(plan_.jobId, ".r", round);
  p.masterPort = masterPort;
  // MASTER_ADDR must be the first host's (its rank 0 serves the rendezvous): --master_addr while that host
  // leads the world, else the address its probe reached it at.
  std::string firstAddress = world.front().host;
  for (const HostProbe& probe : probes) {
    if (probe.host == world.front().host && !probe.address.empty()) firstAddress = probe.address;
  }
  const bool userMasterLeads = options_.masterAddr == world.front().host || options_.masterAddr == firstAddress;
  p.masterAddr = userMasterLeads ? options_.masterAddr : firstAddress;
  planRanks(p, rankProgram(options_));
  // Worlds re-formed after ranks had run and failed; a scale-up or a world the mesh probe refused before
  // any rank started is not a restart of the ranks.
  const int failureRestarts = static_cast<int>(std::count_if(restarts_.begin(), restarts_.end(), [](const Restart& r) {
    return r.cause != "scale-up" && r.cause != "network partition";
  }));
  // planRanks set the per-rank torchrun variables for this world; the job-wide ones count this round.
  const EnvMap jobEnv = torchrunJobEnv(failureRestarts, plan_.elastic->maxRestarts, plan_.jobId);
  for (auto& [name, value] : jobEnv) p.exports[name] = value;
  for (PlannedRank& r : p.ranks) {
    for (auto& [name, value] : jobEnv) r.env[name] = value;
  }
  return p;
}

int ElasticJob::run() {
  const ElasticBounds& bounds = *plan_.elastic;
  const Clock::time_point start = Clock::now();
  auto now = [start] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  ElasticMembership membership(bounds.candidates, bounds.minNodes, bounds.maxNodes);
  membership.setValidWorldSizes(validWorldSizes(options_));
  const std::vector<std::string> candidates = hostNames(bounds.candidates);
  std::vector<std::string> justLost;  // lost in the last world: not probed again before the next one

  int failureRestarts = 0;
  ResourcePool previous;
  std::string pendingCause;             // why the last round ended, for the restart line
  Clock::time_point detectedAt{};
  for (int round = 0;; ++round) {
    installSignalHandlers();
    std::vector<HostProbe> probes;
    std::optional<ResourcePool> world;
    std::set<std::string> answering;
    const double waitStart = now();
    for (bool announced = false;;) {
      // A host lost a moment ago would only cost a probe timeout (a silent one answers nothing); the spare
      // watcher readmits it once it answers again.
      probes = rounds_.probe(minus(candidates, justLost), kProbeTimeout, nullptr);
      justLost.clear();
      answering.clear();
      for (const HostProbe& p : probes) {
        if (p.ok) answering.insert(p.host);
      }
      world = membership.choose(answering, now());
      if (world || gSignal != 0) break;
      const std::vector<std::string> missing = membership.unavailable(answering, now(), wording_.notAnswering);
      if (now() - waitStart >= bounds.timeoutS) {
        throw Error(strCat("elastic job ", plan_.jobId, ": fewer than --min_elastic_nodes ", bounds.minNodes,
                           " hosts usable after waiting ", seconds(now() - waitStart),
                           " s (--elastic_timeout_s ", bounds.timeoutS, "); unavailable: ", join(missing, ", "),
                           "\n  hint: ", wording_.startHint, ", or lower --min_elastic_nodes"));
      }
      if (!announced) {
        say(strCat("dsrun: elastic: ", answering.size(), " usable host(s), fewer than --min_elastic_nodes ",
                   bounds.minNodes, "; waiting up to ", bounds.timeoutS, " s for: ", join(missing, ", ")));
        announced = true;
      }
      std::this_thread::sleep_for(kWaitPeriod);
    }
    // --master_port 0: the backend picks a free port for every world (the agent's pre-flight), before the world
    // is planned, so the plan the round runs is what its ranks get.
    const MasterPortCheck port =
        gSignal != 0 ? MasterPortCheck{}
                     : rounds_.checkMasterPort(world->front().host,
                                               plan_.masterPort == 0 ? 0 : plan_.masterPort + round % kPortSpan);
    if (gSignal != 0) {
      say(strCat("dsrun: received ", signalName(gSignal), " between elastic worlds; no rank was running"));
      printSummary(now());
      return 128 + gSignal;
    }
    if (!port.port) {
      // The probe said yes, the pre-flight's connection said no: as a world whose launch finds it unreachable.
      previous = *world;
      justLost = {world->front().host};
      membership.hostFailed(world->front().host, now());
      restarts_.push_back({"host lost", 0});
      pendingCause = strCat(wording_.unreachableAtLaunch, ": ", port.unreachable);
      detectedAt = Clock::now();
      continue;
    }
    const WorldPlan roundPlan = planRound(*world, probes, round, *port.port);
    std::string restartLine;
    if (round > 0) {
      const std::vector<std::string> before = hostNames(previous), after = hostNames(*world);
      const bool scaleUp = restarts_.back().cause == "scale-up";
      restartLine = strCat("dsrun: elastic ", scaleUp ? "scale-up" : "restart", " (restarts used ", failureRestarts,
                           "/", bounds.maxRestarts, "; ", pendingCause, "); hosts lost: ", listOrNone(minus(before, after)), "; added: ",
                           listOrNone(minus(after, before)), "; world size ", slotCount(previous), " -> ",
                           roundPlan.worldSize(), " on ", world->size(), " host(s)");
    }
    DSRUN_LOG(INFO) << "elastic world " << round << ": " << join(hostNames(*world), ", ") << "; MASTER_ADDR="
                    << roundPlan.masterAddr << " MASTER_PORT=" << roundPlan.masterPort
                    << " DSRUN_RESTART_COUNT=" << failureRestarts;

    SpareWatcher watcher(rounds_, membership, *world, now);
    RoundHooks hooks;
    hooks.rescaleWanted = [&watcher] { return watcher.wanted(); };
    if (round > 0) {
      hooks.onAllRanksStarted = [this, &restartLine, detectedAt] {
        const double lost = std::chrono::duration<double>(Clock::now() - detectedAt).count();
        restarts_.back().lostS = lost;
        return strCat(restartLine, "; ranks running ", seconds(lost), " s after detection");
      };
    }
    const double roundStart = now();
    const RoundOutcome outcome = rounds_.runRound(roundPlan, hooks);
    const int code = outcome.exitCode;
    watcher.stop();
    previous = *world;
    detectedAt = outcome.detectedAt;
    justLost = outcome.lostHosts;
    using End = RoundOutcome::End;
    switch (outcome.end) {
      case End::Completed:
      case End::Signalled:
        printSummary(now());
        return code;
      case End::Rescaled:
        restarts_.push_back({"scale-up", 0});
        pendingCause = wording_.moreAnswer;
        continue;
      case End::Unreachable:
        // The probe said yes, the launch connection said no: try again with what answers now.
        for (const std::string& host : outcome.lostHosts) membership.hostFailed(host, now());
        restarts_.push_back({"host lost", 0});
        pendingCause = strCat(wording_.unreachableAtLaunch, ": ", join(outcome.unreachable, "; "));
        continue;
      case End::Partitioned:
        // Nothing was started: the world's hosts could not all reach each other. Leave the suspects out.
        for (const std::string& host : outcome.lostHosts) membership.hostPartitioned(host, now());
        restarts_.push_back({"network partition", 0});
        pendingCause = strCat("network partition: ", join(outcome.unreachable, "; "), "; left out: ",
                              join(outcome.lostHosts, ", "));
        continue;
      case End::Failed:
        break;
    }
    // The earliest failure decides the cause: its host lost, or one of its ranks failed.
    const bool hostLost = !outcome.failedHosts.empty() &&
                          std::count(outcome.lostHosts.begin(), outcome.lostHosts.end(), outcome.failedHosts.front()) > 0;
    std::vector<std::string> blamed = outcome.failedHosts;
    for (const std::string& h : outcome.lostHosts) {
      if (std::find(blamed.begin(), blamed.end(), h) == blamed.end()) blamed.push_back(h);
    }
    for (const std::string& h : blamed) membership.hostFailed(h, now());
    membership.roundSurvived(minus(hostNames(*world), blamed), now() - roundStart);
    if (failureRestarts >= bounds.maxRestarts) {
      say(strCat("dsrun: ", outcome.cause, "; no restart left (--max_restarts ", bounds.maxRestarts, " used)"));
      printSummary(now());  // the failure that ends the job restarted nothing: not counted as a restart
      return code;
    }
    ++failureRestarts;
    restarts_.push_back({hostLost ? "host lost" : "rank failure", 0});
    pendingCause = strCat(hostLost ? "host lost: " : "rank failure: ", outcome.cause);
  }
}

void ElasticJob::printSummary(double totalS) const {
  std::map<std::string, int> byCause;
  double lost = 0;
  for (const Restart& r : restarts_) {
    ++byCause[r.cause];
    lost += r.lostS;
  }
  std::vector<std::string> parts;
  for (const auto& [cause, n] : byCause) parts.push_back(strCat(n, " ", cause));
  say(strCat("dsrun: elastic summary: ", restarts_.size(), " restart(s)", parts.empty() ? "" : " (", join(parts, ", "),
             parts.empty() ? "" : ")", "; ", seconds(lost), " s from detection to ranks running again; ",
             seconds(totalS), " s in all"));
}

}  // namespace dsrun::launcher
