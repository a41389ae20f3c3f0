#include "launcher/backends/agent/agent_mesh_probe.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/agent/agent_job.h"
#include "launcher/backends/agent/agent_mesh_plan.h"

namespace dsrun::launcher {

MeshProbeOutcome probeAgentMesh(boost::asio::io_context& io, const std::vector<MeshMember>& members, int agentPort,
                                std::chrono::milliseconds timeout, const std::function<bool()>& interrupted) {
  MeshProbeOutcome outcome;
  // Shared with the callbacks: a reply arriving after this function gave up must not write into its frame.
  struct State {
    std::vector<std::optional<wire::MeshProbeReply>> replies;
    size_t waiting = 0;
  };
  const auto state = std::make_shared<State>();
  state->replies.resize(members.size());
  auto& replies = state->replies;
  size_t& waiting = state->waiting;
  for (size_t i = 0; i < members.size(); ++i) {
    if (!members[i].client->agentProbesMesh()) {
      DSRUN_LOG(DEBUG) << "mesh probe: " << members[i].host << "'s agent predates the probe; it is only a target";
      continue;
    }
    std::vector<std::string> targets;
    for (size_t j : meshProbePeers(i, members.size())) targets.push_back(strCat(members[j].host, ":", agentPort));
    outcome.pairs += targets.size();
    ++waiting;
    members[i].client->probeMesh(targets, static_cast<uint32_t>(timeout.count()),
                                 [state, i](const wire::MeshProbeReply& r) {
                                   state->replies[i] = r;
                                   --state->waiting;
                                 });
  }
  // The agents give up on a target after `timeout`; their reply may take a little longer to arrive.
  const auto deadline = std::chrono::steady_clock::now() + timeout + std::chrono::seconds(1);
  const auto anyClosed = [&members] {
    for (const MeshMember& m : members) {
      if (m.client->closed()) return true;
    }
    return false;
  };
  while (waiting > 0 && !anyClosed() && !interrupted()) {
    if (io.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  if (interrupted()) {
    outcome.interrupted = true;
    return outcome;
  }
  std::vector<std::pair<std::string, std::string>> pairs;  // {from, to} that did not connect
  std::vector<std::string> order;
  for (const MeshMember& m : members) order.push_back(m.host);
  for (size_t i = 0; i < members.size(); ++i) {
    if (!members[i].client->agentProbesMesh()) continue;
    if (!replies[i]) {
      outcome.broken.push_back(strCat(members[i].host, ": its agent ",
                                      members[i].client->closed() ? "closed the connection" : "did not answer",
                                      " during the mesh probe"));
      for (const std::string& other : order) {
        if (other != members[i].host) pairs.emplace_back(members[i].host, other);
      }
      continue;
    }
    for (const wire::MeshProbeResult& r : replies[i]->results()) {
      if (!r.error().empty()) {
        outcome.broken.push_back(strCat(members[i].host, " cannot reach ", r.target(), ": ", r.error()));
        pairs.emplace_back(members[i].host, r.target().substr(0, r.target().rfind(':')));
      } else if (r.micros() > outcome.slowestMicros) {
        outcome.slowestMicros = r.micros();
      }
    }
  }
  outcome.suspects = meshSuspects(pairs, order);
  return outcome;
}

std::vector<std::string> meshSuspects(const std::vector<std::pair<std::string, std::string>>& pairs,
                                      const std::vector<std::string>& order) {
  std::vector<std::pair<std::string, std::string>> left = pairs;
  std::vector<std::string> suspects;
  while (!left.empty()) {
    std::map<std::string, size_t> count;
    for (const auto& [from, to] : left) {
      ++count[from];
      ++count[to];
    }
    // The host in most broken pairs; on a tie the latest in job order (the first host leads the world).
    std::string worst;
    size_t worstCount = 0, worstIndex = 0;
    for (const auto& [host, n] : count) {
      const auto index = static_cast<size_t>(std::find(order.begin(), order.end(), host) - order.begin());
      if (n > worstCount || (n == worstCount && index > worstIndex)) {
        worst = host;
        worstCount = n;
        worstIndex = index;
      }
    }
    suspects.push_back(worst);
    left.erase(std::remove_if(left.begin(), left.end(),
                              [&worst](const auto& p) { return p.first == worst || p.second == worst; }),
               left.end());
  }
  const auto position = [&order](const std::string& h) { return std::find(order.begin(), order.end(), h); };
  std::sort(suspects.begin(), suspects.end(),
            [&position](const std::string& a, const std::string& b) { return position(a) < position(b); });
  return suspects;
}

std::optional<int> AgentJob::probeMesh() {
  std::vector<MeshMember> members;
  for (auto& node : nodes_) members.push_back({node->host, node->client.get()});
  const auto started = std::chrono::steady_clock::now();
  const MeshProbeOutcome outcome = probeAgentMesh(io_, members, settings_.port, settings_.meshProbeTimeout,
                                                  [this] { return firstSignal() != 0; });
  const auto tookMs =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  if (outcome.interrupted) return nothingStarted("during the mesh probe");
  if (!outcome.broken.empty() && settings_.elasticRound) {
    // A world with both ends of a broken pair would hang in its first collective: the controller re-forms
    // without the suspects.
    for (auto& node : nodes_) node->client->close();
    return roundEndedUnstarted(Outcome::End::Partitioned, outcome.broken, outcome.suspects);
  }
  if (!outcome.broken.empty()) {
    for (auto& node : nodes_) node->client->close();
    throw ConfigError(strCat("mesh probe: ", outcome.broken.front(),
                             outcome.broken.size() > 1 ? strCat(" (and ", outcome.broken.size() - 1, " more)") : "",
                             "; nothing was started\n  hint: every host must reach every other on the network the "
                             "ranks use; check routes and firewalls, or pass --no_mesh_probe to launch anyway"));
  }
  // DEBUG: it runs before every agent job (docs/agent.md gives its cost).
  DSRUN_LOG(DEBUG) << "mesh probe: " << outcome.pairs << " pairs of " << members.size()
                  << " agents connected in " << tookMs << " ms (slowest connect " << outcome.slowestMicros << " us)";
  return std::nullopt;
}

}  // namespace dsrun::launcher
