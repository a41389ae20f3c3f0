#include "launcher/backends/agent/agent_launch_request.h"

#include <algorithm>

#include "proto/rank_env.h"

namespace dsrun::launcher {

namespace {

void fillEmptyRequest(const WorldPlan& plan, const NodeLaunchSettings& settings, wire::LaunchRequest& launch) {
  launch.set_job_id(plan.jobId);
  // 0 would mean "the agent's default"; a grace of 0 asks for an immediate SIGKILL.
  launch.set_kill_grace_s(settings.killGraceS > 0 ? settings.killGraceS : 1e-3);
  launch.mutable_log()->set_each_rank_log_dir(settings.eachRankLogDir);
  launch.mutable_log()->set_tag(settings.logTag);
  // Four looks per timeout: a hang is noticed within a quarter of it.
  if (settings.hangTimeoutS > 0) launch.set_progress_interval_s(std::min(1.0, settings.hangTimeoutS / 4));
  if (settings.rendezvous) *launch.mutable_rendezvous() = *settings.rendezvous;
}

wire::LaunchRequest emptyRequest(const WorldPlan& plan, const NodeLaunchSettings& settings) {
  wire::LaunchRequest launch;
  fillEmptyRequest(plan, settings, launch);
  return launch;
}

void addPlannedRank(wire::LaunchRequest& launch, const PlannedRank& r, const NodeLaunchSettings& settings) {
  wire::RankLaunch* rank = launch.add_ranks();
  rank->set_rank(r.rank);
  rank->set_local_rank(r.localRank);
  for (const auto& word : r.argv) rank->add_argv(word);
  for (const auto& [name, value] : r.env) proto::addEnv(*rank, name, value);
  rank->set_cwd(settings.cwd);
  for (int core : r.cores) rank->add_cores(core);
}

// A tree launch's plan has no commands yet (RankDetail::Slots): each is planned here, as its node's request
// is made on the build's threads (agent_tree_build.h), while dsrun dials the roots.
void addRank(const WorldPlan& plan, wire::LaunchRequest& launch, const PlannedRank& r,
             const NodeLaunchSettings& settings) {
  if (plan.deferredCommands) addPlannedRank(launch, withCommand(plan, r), settings);
  else addPlannedRank(launch, r, settings);
}

}  // namespace

wire::LaunchRequest nodeLaunchRequest(const WorldPlan& plan, int nodeRank, const NodeLaunchSettings& settings) {
  wire::LaunchRequest launch = emptyRequest(plan, settings);
  for (const PlannedRank* r : plan.ranksOnNode(nodeRank)) addRank(plan, launch, *r, settings);
  return launch;
}

std::vector<std::vector<const PlannedRank*>> ranksByNode(const WorldPlan& plan) {
  std::vector<std::vector<const PlannedRank*>> out(plan.hosts.size());
  for (const PlannedRank& r : plan.ranks) out.at(static_cast<size_t>(r.nodeRank)).push_back(&r);
  return out;
}

void fillNodeLaunchRequest(const WorldPlan& plan, const std::vector<const PlannedRank*>& ranks,
                           const NodeLaunchSettings& settings, wire::LaunchRequest& out) {
  out.Clear();
  fillEmptyRequest(plan, settings, out);
  for (const PlannedRank* r : ranks) addRank(plan, out, *r, settings);
}

std::vector<wire::LaunchRequest> nodeLaunchRequests(const WorldPlan& plan, const NodeLaunchSettings& settings) {
  std::vector<wire::LaunchRequest> out(plan.hosts.size(), emptyRequest(plan, settings));
  // plan.ranks is in rank order, host by host, local ranks ascending: ranksOnNode's order too.
  for (const PlannedRank& r : plan.ranks) addRank(plan, out.at(static_cast<size_t>(r.nodeRank)), r, settings);
  return out;
}

}  // namespace dsrun::launcher
