#include "launcher/dry_run.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using Json = nlohmann::ordered_json;

namespace {

dsrun::launcher::WorldPlan twoHostPlan() {
  dsrun::launcher::WorldPlan plan;
  plan.hosts = {{"worker-1", {0, 2}}, {"worker-0", {1}}};
  plan.masterAddr = "10.0.0.1";
  plan.masterPort = 1234;
  plan.launcher = "pdsh";
  plan.multiNode = true;
  plan.jobId = "j";
  dsrun::launcher::PlannedRank r;
  r.rank = 0;
  r.localRank = 0;
  r.host = "worker-1";
  r.slot = 0;
  r.argv = {"python3", "-u", "t.py", "--local_rank=0", "a b", "ü\n$"};
  r.env = {{"RANK", "0"}, {"Z", "q\"uote'"}};
  plan.ranks.push_back(r);
  r.rank = 1;
  r.localRank = 1;
  r.slot = 2;
  r.cores = {0, 2, 3};
  plan.ranks.push_back(r);
  r.rank = 2;
  r.localRank = 0;
  r.nodeRank = 1;
  r.host = "worker-0";
  r.slot = 1;
  r.cores = {4, 5, 6, 7};
  plan.ranks.push_back(r);
  return plan;
}

}  // namespace

TEST_CASE("dryRunJson prints the documented object with keys and hosts in order", "[launcher][dry_run]") {
  const std::string text = dsrun::launcher::dryRunJson(twoHostPlan(), {{"worker-1", {"ssh", "worker-1", "x y"}}});
  // Indented by two: one key per line, so a person can read a multi-host plan.
  CHECK(text.find("{\n  \"world_info\": {\n    \"worker-1\": [\n      0,") == 0);
  const Json j = Json::parse(text);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  CHECK(keys == std::vector<std::string>{"world_info", "master_addr", "master_port", "launcher", "ranks",
                                         "node_commands"});
  std::vector<std::string> hosts;
  for (const auto& item : j["world_info"].items()) hosts.push_back(item.key());
  CHECK(hosts == std::vector<std::string>{"worker-1", "worker-0"});
  CHECK(j["world_info"]["worker-1"] == Json::array({0, 2}));
  CHECK(j["master_addr"] == "10.0.0.1");
  CHECK(j["master_port"] == 1234);
  CHECK(j["launcher"] == "pdsh");
  REQUIRE(j["ranks"].size() == 3);
  const Json& r0 = j["ranks"][0];
  std::vector<std::string> rankKeys;
  for (const auto& item : r0.items()) rankKeys.push_back(item.key());
  CHECK(rankKeys == std::vector<std::string>{"rank", "local_rank", "host", "slot", "env", "argv"});
  CHECK(r0["argv"][4] == "a b");
  CHECK(r0["argv"][5] == "ü\n$");
  CHECK(r0["env"]["Z"] == "q\"uote'");
  CHECK(j["ranks"][1]["cores"] == "0,2-3");
  CHECK(j["ranks"][2]["cores"] == "4-7");
  CHECK(j["ranks"][2]["host"] == "worker-0");
  CHECK(j["ranks"][2]["slot"] == 1);
  REQUIRE(j["node_commands"].size() == 1);
  CHECK(j["node_commands"][0]["host"] == "worker-1");
  CHECK(j["node_commands"][0]["argv"] == Json::array({"ssh", "worker-1", "x y"}));
}

TEST_CASE("dryRunJson has an empty node_commands list for local runs", "[launcher][dry_run]") {
  const Json j = Json::parse(dsrun::launcher::dryRunJson(twoHostPlan(), {}));
  CHECK(j["node_commands"].is_array());
  CHECK(j["node_commands"].empty());
}

TEST_CASE("dryRunJson adds the backend's sections after node_commands", "[launcher][dry_run]") {
  const Json j = Json::parse(dsrun::launcher::dryRunJson(twoHostPlan(), {}, {{"agent_tree", R"({"width": 2, "listing": ["a"]})"}}));
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  REQUIRE(keys.size() >= 2);
  CHECK(keys[keys.size() - 2] == "node_commands");
  CHECK(keys.back() == "agent_tree");
  CHECK(j["agent_tree"]["width"] == 2);
  CHECK(j["agent_tree"]["listing"][0] == "a");
}

TEST_CASE("dryRunJson survives invalid UTF-8 by substituting U+FFFD", "[launcher][dry_run]") {
  dsrun::launcher::WorldPlan plan = twoHostPlan();
  plan.ranks[0].argv.push_back(std::string("bad\xff"));
  const Json j = Json::parse(dsrun::launcher::dryRunJson(plan, {}));
  CHECK(j["ranks"][0]["argv"].back() == "bad\xEF\xBF\xBD");
}

TEST_CASE("dryRunJson shows an elastic job's bounds and candidates after the documented keys", "[launcher][dry_run]") {
  dsrun::launcher::WorldPlan plan = twoHostPlan();
  CHECK_FALSE(Json::parse(dsrun::launcher::dryRunJson(plan, {})).contains("elastic"));
  dsrun::launcher::ElasticBounds bounds;
  bounds.minNodes = 1;
  bounds.maxNodes = 2;
  bounds.maxRestarts = 7;
  bounds.timeoutS = 30;
  bounds.candidates = {{"worker-1", {0, 2}}, {"worker-0", {1}}, {"worker-2", {0}}};
  plan.elastic = bounds;
  const Json j = Json::parse(dsrun::launcher::dryRunJson(plan, {}));
  CHECK(j["elastic"]["min_nodes"] == 1);
  CHECK(j["elastic"]["max_nodes"] == 2);
  CHECK(j["elastic"]["max_restarts"] == 7);
  CHECK(j["elastic"]["timeout_s"] == 30);
  CHECK(j["elastic"]["candidates"].size() == 3);
  CHECK(j["elastic"]["candidates"]["worker-2"] == Json::array({0}));
}

TEST_CASE("dryRunJson names the host an inferred MASTER_ADDR would come from", "[launcher][dry_run]") {
  dsrun::launcher::WorldPlan plan = twoHostPlan();
  CHECK_FALSE(Json::parse(dsrun::launcher::dryRunJson(plan, {})).contains("master_addr_inferred_from"));
  plan.masterAddr = "<inferred at launch>";
  plan.masterAddrHost = "worker-1";
  const Json j = Json::parse(dsrun::launcher::dryRunJson(plan, {}));
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  CHECK(keys == std::vector<std::string>{"world_info", "master_addr", "master_addr_inferred_from", "master_port",
                                         "launcher", "ranks", "node_commands"});
  CHECK(j["master_addr_inferred_from"] == "worker-1");
}
