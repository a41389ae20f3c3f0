#include "launcher/dry_run.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "launcher/resource_spec.h"

namespace dsrun::launcher {

std::string dryRunJson(const WorldPlan& plan, const std::vector<NodeCommand>& nodeCommands,
                       const std::vector<DryRunSection>& sections) {
  // ordered_json keeps world_info in hostfile order and the keys in the documented order.
  using Json = nlohmann::ordered_json;
  Json worldInfo = Json::object();
  for (const HostSlots& host : plan.hosts) worldInfo[host.host] = host.slots;

  DSRUN_CHECK(!plan.deferredCommands, "a dry run shows every rank's command: plan it with RankDetail::Commands");
  Json ranks = Json::array();
  for (const PlannedRank& r : plan.ranks) {
    Json rank = {{"rank", r.rank}, {"local_rank", r.localRank}, {"host", r.host}, {"slot", r.slot}};
    Json env = Json::object();
    for (const auto& [name, value] : r.env) env[name] = value;
    rank["env"] = env;
    rank["argv"] = r.argv;
    if (!r.cores.empty()) rank["cores"] = formatRangeList(r.cores);
    ranks.push_back(rank);
  }

  Json commands = Json::array();
  for (const NodeCommand& c : nodeCommands) commands.push_back({{"host", c.host}, {"argv", c.argv}});

  Json out = {{"world_info", worldInfo}, {"master_addr", plan.masterAddr}};
  // A dry run contacts no host: an address a launch would infer is shown as the host it would come from.
  if (!plan.masterAddrHost.empty()) out["master_addr_inferred_from"] = plan.masterAddrHost;
  out["master_port"] = plan.masterPort;
  out["launcher"] = plan.launcher;
  out["ranks"] = ranks;
  out["node_commands"] = commands;
  for (const DryRunSection& section : sections) out[section.key] = Json::parse(section.json);
  if (plan.elastic) {
    Json candidates = Json::object();
    for (const HostSlots& host : plan.elastic->candidates) candidates[host.host] = host.slots;
    out["elastic"] = {{"min_nodes", plan.elastic->minNodes},
                      {"max_nodes", plan.elastic->maxNodes},
                      {"max_restarts", plan.elastic->maxRestarts},
                      {"timeout_s", plan.elastic->timeoutS},
                      {"candidates", candidates}};
  }
  // Indented: the plan is read by people first (a 4-host job is kilobytes of JSON); json.load reads it as well.
  return out.dump(2, ' ', false, Json::error_handler_t::replace);
}

}  // namespace dsrun::launcher
