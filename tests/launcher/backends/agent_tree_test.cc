// The agent tree (--tree_width): its shape over the plan's hosts, the dry run's listing, and the tree launch
// dsrun would send, expanded on every node into exactly the node's LaunchRequest.
#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <set>

#include "common/strings.h"
#include "launcher/backends/agent/agent_backend.h"
#include "launcher/backends/agent/agent_tree_choice.h"
#include "launcher/backends/agent/agent_tree_launch.h"
#include "launcher/backends/agent/agent_tree_listing.h"
#include "launcher/backends/agent/agent_tree_plan.h"
#include "proto/tree_launch_expander.h"
#include "proto/tree_subtree.h"
#include "tests/common/temp_dir.h"
#include "tests/launcher/backends/plan_fixture.h"
#include "tests/tls/test_pki.h"
#include "tls/ssl_context.h"

using namespace dsrun;
using namespace dsrun::launcher;

namespace {

const proto::Sha256 kSha = [](std::string_view d) { return tls::sha256(d); };

std::string hostfileOf(size_t hosts, int slots) {
  std::string text;
  for (size_t i = 0; i < hosts; ++i) text += strCat("node-", i, " slots=", slots, "\n");
  return text;
}

/// The fewest levels a forest of `width` roots with `width` children each needs for `n` hosts.
int fewestLevels(size_t n, int width) {
  size_t capacity = 0, level = 1;
  int levels = 0;
  while (capacity < n) {
    level *= static_cast<size_t>(width);
    capacity += level;
    ++levels;
  }
  return levels;
}

struct Received {
  size_t node;
  wire::TreeLaunch launch;
};

/// Every host's launch, forwarded from the roots down as the agents would.
std::vector<Received> deliver(const std::vector<RootTreeLaunch>& roots, const WorldPlan& plan) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < plan.hosts.size(); ++i) index[plan.hosts[i].host] = i;
  std::deque<Received> queue;
  for (const RootTreeLaunch& r : roots) queue.push_back({r.node, r.launch});
  std::vector<Received> out;
  while (!queue.empty()) {
    Received got = std::move(queue.front());
    queue.pop_front();
    const proto::ReceivedTreeLaunch r = proto::readTreeLaunch(got.launch, kSha);
    for (proto::ChildTreeLaunch& c : proto::childTreeLaunches(got.launch, r)) queue.push_back({index.at(c.host), c.launch});
    out.push_back(std::move(got));
  }
  return out;
}

}  // namespace

TEST_CASE("the agent tree splits the hosts into contiguous spans of at most width children, as shallow as it can be") {
  for (int width : {2, 3, 4, 16}) {
    for (size_t n : {1, 2, 5, 16, 17, 100, 273, 1000}) {
      const AgentTreePlan tree = planAgentTree(n, width);
      CAPTURE(width, n);
      REQUIRE(tree.size() == n);
      CHECK(proto::treeOrderError(tree.parent, false).empty());  // plan order is the pre-order
      CHECK(tree.subtreeEnd == proto::treeSubtreeEnds(tree.parent));
      CHECK(tree.roots().size() == std::min(n, static_cast<size_t>(width)));
      CHECK(tree.levels() == fewestLevels(n, width));
      for (size_t i = 0; i < n; ++i) {
        const std::vector<size_t> children = tree.children(i);
        CHECK(children.size() <= static_cast<size_t>(width));
        size_t smallest = SIZE_MAX, largest = 0;
        for (size_t c : children) {
          CHECK(tree.parent[c] == static_cast<int>(i));
          CHECK(tree.depth[c] == tree.depth[i] + 1);
          smallest = std::min(smallest, tree.subtreeEnd[c] - c);
          largest = std::max(largest, tree.subtreeEnd[c] - c);
        }
        if (!children.empty()) CHECK(largest - smallest <= 1);  // balanced
      }
    }
  }
}

TEST_CASE("the dry run lists every host of a small tree, indented by level") {
  auto f = test::makePlan(hostfileOf(7, 2), {"--launcher", "agent", "--tree_width", "2", "train.py"});
  const std::vector<std::string> expected = {
      "node-0 (ranks 0-1)", "  node-1 (ranks 2-3)", "    node-2 (ranks 4-5)", "  node-3 (ranks 6-7)",
      "node-4 (ranks 8-9)", "  node-5 (ranks 10-11)", "  node-6 (ranks 12-13)"};
  CHECK(agentTreeListing(planAgentTree(7, 2), f->plan) == expected);
}

TEST_CASE("the dry run of a large tree lists the levels that fit and names every host below them") {
  auto f = test::makePlan(hostfileOf(300, 1), {"--launcher", "agent", "train.py"});
  const AgentTreePlan tree = planAgentTree(300, 4);  // 4 + 16 + 64 + 216 hosts by level
  const std::vector<std::string> lines = agentTreeListing(tree, f->plan, 64);
  REQUIRE(lines.size() == 20);  // two levels fit, the third would make 84 lines
  CHECK(lines[0] == "node-0 (rank 0)");
  CHECK(lines[1] == "  node-1 (rank 1) + 18 below: node-2 .. node-19, ranks 2-19");
  size_t listed = 0, below = 0;
  for (const std::string& line : lines) {
    ++listed;
    const size_t plus = line.find(" + ");
    if (plus != std::string::npos) below += std::stoul(line.substr(plus + 3));
  }
  CHECK(listed + below == 300);
  CHECK(agentTreeListing(planAgentTree(300, 64), f->plan, 10).size() == 64);  // the roots, however many
}

TEST_CASE("every node of a planned world expands its star LaunchRequest byte for byte; every rank once") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const tls::TreeSigner signer(pki.launcher());
  std::unique_ptr<X509_STORE, tls::OpensslDeleter<X509_STORE, X509_STORE_free>> trust(
      tls::makeTrustStore(pki.node("n"), "--tls_dir"));
  const std::vector<std::vector<std::string>> worlds = {
      {"--launcher", "agent", "train.py", "--lr", "0.1"},
      {"--launcher", "agent", "--bind_cores_to_rank", "train.py"},
      {"--launcher", "agent", "--enable_each_rank_log", "/logs", "--no_local_rank", "train.py"},
      {"--launcher", "agent", "--module", "pkg.train"},
      {"--launcher", "agent", "--elastic_training", "--master_addr", "node-0", "--min_elastic_nodes", "2",
       "--max_elastic_nodes", "9", "train.py"},
  };
  for (const auto& args : worlds) {
    for (int width : {2, 3}) {
      CAPTURE(args, width);
      auto f = test::makePlan(hostfileOf(9, 3), args, {{"PATH", "/usr/bin"}, {"NCCL_DEBUG", "INFO"}});
      NodeLaunchSettings settings;
      settings.eachRankLogDir = args[2] == "--enable_each_rank_log" ? "/logs" : "";
      settings.logTag = "20261127";
      settings.cwd = "/work/job";
      settings.hangTimeoutS = 8;
      const AgentTreePlan tree = planAgentTree(f->plan.hosts.size(), width);
      const auto roots = signedTreeLaunches(treeLaunchNodes(f->plan, tree, 29600, settings),
                                            {1'800'000'000'000'000, 300, static_cast<uint32_t>(width), "test"}, signer);
      CHECK(roots.size() == static_cast<size_t>(width));
      std::set<size_t> nodes;
      std::multiset<int> ranks;
      for (const Received& got : deliver(roots, f->plan)) {
        const proto::ReceivedTreeLaunch r = proto::readTreeLaunch(got.launch, kSha);
        CHECK(tls::verifyTreeSignature(trust.get(), got.launch.launcher_certificate(), proto::treeSignedMessage(r.root),
                                       got.launch.signature()) == "");
        const wire::LaunchRequest own = proto::ownLaunchRequest(r);
        CHECK(own.SerializeAsString() ==
              nodeLaunchRequest(f->plan, static_cast<int>(got.node), settings).SerializeAsString());
        nodes.insert(got.node);
        for (const auto& rank : own.ranks()) ranks.insert(rank.rank());
      }
      CHECK(nodes.size() == f->plan.hosts.size());
      std::multiset<int> planned;
      for (const PlannedRank& r : f->plan.ranks) planned.insert(r.rank);
      CHECK(ranks == planned);
    }
  }
}

TEST_CASE("the request carries the plan's ranks as they are") {
  auto f = test::makePlan(hostfileOf(2, 2), {"--launcher", "agent", "--bind_cores_to_rank", "train.py"});
  NodeLaunchSettings settings;
  settings.cwd = "/work/job";
  const wire::LaunchRequest r = nodeLaunchRequest(f->plan, 1, settings);
  REQUIRE(r.ranks_size() == 2);
  const PlannedRank& planned = f->plan.ranks[3];
  CHECK(r.job_id() == "job-1");
  CHECK(r.ranks(1).rank() == planned.rank);
  CHECK(r.ranks(1).local_rank() == planned.localRank);
  CHECK(std::vector<std::string>(r.ranks(1).argv().begin(), r.ranks(1).argv().end()) == planned.argv);
  REQUIRE(r.ranks(1).env_size() == static_cast<int>(planned.env.size()));
  auto it = planned.env.begin();
  for (const auto& var : r.ranks(1).env()) {
    CHECK(var.name() == it->first);
    CHECK(var.value() == it->second);
    ++it;
  }
  CHECK(std::vector<int>(r.ranks(1).cores().begin(), r.ranks(1).cores().end()) == planned.cores);
  CHECK(r.kill_grace_s() == 30);
  CHECK(r.progress_interval_s() == 0);
  CHECK(nodeLaunchRequests(f->plan, settings)[1].SerializeAsString() == r.SerializeAsString());
}

TEST_CASE("with --rendezvous agent every node's request names rank 0's agent; without it none does") {
  auto f = test::makePlan(hostfileOf(3, 2), {"--launcher", "agent", "train.py"});
  NodeLaunchSettings settings;
  CHECK_FALSE(nodeLaunchRequests(f->plan, settings)[2].has_rendezvous());
  wire::StoreRendezvous root;
  root.set_root_host("node0");
  root.set_root_address("node0");
  root.set_root_port(29600);
  settings.rendezvous = root;
  for (const auto& r : nodeLaunchRequests(f->plan, settings)) {
    REQUIRE(r.has_rendezvous());
    CHECK(r.rendezvous().root_host() == "node0");
    CHECK(r.rendezvous().root_port() == 29600);
    CHECK_FALSE(r.rendezvous().root());  // AgentJob marks rank 0's node's request, in the star only
  }
}

TEST_CASE("no tree launch message grows with the node count beyond its subtree's own parts") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const tls::TreeSigner signer(pki.launcher());
  const int width = 4;
  std::map<size_t, size_t> headerBytes, leafBytes;
  for (size_t n : {16, 256, 2048}) {
    CAPTURE(n);
    auto f = test::makePlan(hostfileOf(n, 1), {"--launcher", "agent", "train.py"});
    NodeLaunchSettings settings;
    settings.cwd = "/work/job";
    const AgentTreePlan tree = planAgentTree(n, width);
    const auto roots = signedTreeLaunches(treeLaunchNodes(f->plan, tree, 29600, settings),
                                          {1'800'000'000'000'000, 300, width, "test"}, signer);
    REQUIRE(roots.size() == static_cast<size_t>(width));
    for (const Received& got : deliver(roots, f->plan)) {
      const wire::TreeLaunch& m = got.launch;
      // Its own subtree, and one proof level per ancestor (and the roots'), each without the path's digest.
      REQUIRE(static_cast<size_t>(m.subtree_size()) == tree.subtreeEnd[got.node] - got.node);
      REQUIRE(m.proof_size() == tree.depth[got.node] + 1);
      for (const auto& level : m.proof()) CHECK(level.child_digests_size() <= width - 1);
      size_t parts = 0;
      for (const auto& node : m.subtree()) parts += node.part().size() + 8;  // + the TreeNode's framing
      const size_t proofBound = static_cast<size_t>(m.proof_size()) * (static_cast<size_t>(width) * 34 + 40);
      CHECK(m.ByteSizeLong() <= m.header().size() + m.signature().size() + m.launcher_certificate().size() + parts +
                                    proofBound + 16);
      headerBytes[n] = m.header().size();
      if (m.subtree_size() == 1) leafBytes[n] = std::max(leafBytes[n], m.ByteSizeLong());
    }
  }
  // The shared header does not grow with the nodes: only numbers in it gain digits (node_count, WORLD_SIZE...).
  CHECK(headerBytes[2048] <= headerBytes[16] + 16);
  // A leaf gets its part and a proof of width x depth digests: 128 times the nodes, a few proof levels more.
  CHECK(leafBytes[2048] <= leafBytes[16] + 4 * (width * 34 + 40));
}

TEST_CASE("an agent whose Welcome does not offer tree launches is refused in one line naming it") {
  wire::Welcome older;
  older.set_protocol_version(3);
  CHECK_THROWS_WITH(requireTreeLaunch(older, "dsn3", 29600),
                    "agent dsn3:29600 does not serve tree launches (an older dsrun-agent); nothing was started\n"
                    "  hint: run the same dsrun release on every host (dsrun --version), or pass --tree_width 0 to "
                    "launch with dsrun dialling every agent");
  wire::Welcome current = older;
  current.set_tree_launch(true);
  CHECK_NOTHROW(requireTreeLaunch(current, "dsn3", 29600));
}

TEST_CASE("a root's launch over the agents' frame limit is refused, naming the root and the width") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const tls::TreeSigner signer(pki.launcher());
  auto f = test::makePlan(hostfileOf(9, 2), {"--launcher", "agent", "train.py"});
  const AgentTreePlan tree = planAgentTree(9, 2);  // roots node-0 and node-5 with 4 and 3 hosts below
  const auto nodes = treeLaunchNodes(f->plan, tree, 29600, {});
  // About 1.6 KB for node-0's launch (its ECDSA signature varies by a byte or two between signings).
  const size_t size = signedTreeLaunches(nodes, {0, 300, 2, "test"}, signer).front().launch.ByteSizeLong();
  CHECK_NOTHROW(signedTreeLaunches(nodes, {0, 300, 2, "test"}, signer, size + 16));
  CHECK_THROWS_WITH(signedTreeLaunches(nodes, {0, 300, 2, "test"}, signer, size - 16),
                    Catch::Matchers::StartsWith("--tree_width 2: the launch for node-0 and the 4 hosts below it is ") &&
                        Catch::Matchers::Contains("hint: a wider tree gives each root fewer hosts"));
}

TEST_CASE("dsrun's launch built with each request made on demand, on several threads, is the launch of the full requests") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const tls::TreeSigner signer(pki.launcher());
  // Uneven slots, so that the threads' slices cut nodes of different sizes.
  std::string hostfile;
  for (size_t i = 0; i < 23; ++i) hostfile += strCat("node-", i, " slots=", 1 + i % 3, "\n");
  auto f = test::makePlan(hostfile, {"--launcher", "agent", "train.py", "--lr", "0.1"});
  const AgentTreePlan tree = planAgentTree(23, 3);
  NodeLaunchSettings settings;
  settings.cwd = "/work/job";
  settings.hangTimeoutS = 8;
  const proto::TreeLaunchStamp stamp{1700000000000000, 300, 3, "test"};
  const std::vector<RootTreeLaunch> full = signedTreeLaunches(treeLaunchNodes(f->plan, tree, 29600, settings), stamp, signer);
  for (unsigned threads : {1u, 2u, 5u, 64u}) {
    const auto built = signedTreeLaunches(f->plan, treeLaunchShape(f->plan, tree, 29600), settings, stamp, signer, threads);
    REQUIRE(built.size() == full.size());
    for (size_t i = 0; i < built.size(); ++i) {
      CHECK(built[i].node == full[i].node);
      // ECDSA signatures are randomized: everything but the signature is the same bytes.
      wire::TreeLaunch a = built[i].launch, b = full[i].launch;
      a.clear_signature();
      b.clear_signature();
      CHECK(a.SerializeAsString() == b.SerializeAsString());
    }
    // And every host still expands exactly its own request.
    for (const Received& r : deliver(built, f->plan)) {
      const auto own = proto::ownLaunchRequest(proto::readTreeLaunch(r.launch, kSha));
      CHECK(own.SerializeAsString() == nodeLaunchRequest(f->plan, static_cast<int>(r.node), settings).SerializeAsString());
    }
  }
}

TEST_CASE("a plan of slots (each command planned by the build's threads) gives the launch of the full plan") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const tls::TreeSigner signer(pki.launcher());
  std::string hostfile;
  for (size_t i = 0; i < 23; ++i) hostfile += strCat("node-", i, " slots=", 1 + i % 3, "\n");
  auto f = test::makePlan(hostfile, {"--launcher", "agent", "--bind_cores_to_rank", "train.py", "--lr", "0.1"},
                          {{"PATH", "/usr/bin"}, {"NCCL_DEBUG", "WARN"}});
  PlanInputs inputs;
  inputs.hostfile = parseHostfile(hostfile, "/job/hostfile");
  inputs.launcherEnv = f->env;
  inputs.cwd = "/work/job";
  inputs.physicalCores = 8;
  inputs.jobId = "job-1";
  const WorldPlan slots = planWorld(f->options, inputs, Rendezvous{"10.0.0.1", std::nullopt}, RankDetail::Slots);
  REQUIRE(slots.deferredCommands);
  const AgentTreePlan tree = planAgentTree(23, 3);
  NodeLaunchSettings settings;
  settings.cwd = "/work/job";
  const proto::TreeLaunchStamp stamp{1700000000000000, 300, 3, "test"};
  const std::vector<RootTreeLaunch> full = signedTreeLaunches(treeLaunchNodes(f->plan, tree, 29600, settings), stamp, signer);
  for (unsigned threads : {1u, 4u}) {
    const auto built = signedTreeLaunches(slots, treeLaunchShape(slots, tree, 29600), settings, stamp, signer, threads);
    REQUIRE(built.size() == full.size());
    for (size_t i = 0; i < built.size(); ++i) {
      wire::TreeLaunch a = built[i].launch, b = full[i].launch;
      a.clear_signature();
      b.clear_signature();
      CHECK(a.SerializeAsString() == b.SerializeAsString());
    }
  }
  // The star's requests too, should a plan of slots reach them.
  for (int node = 0; node < 23; ++node) {
    CHECK(nodeLaunchRequest(slots, node, settings).SerializeAsString() ==
          nodeLaunchRequest(f->plan, node, settings).SerializeAsString());
  }
}

TEST_CASE("the agent backend plans a tree launch's ranks as slots, a star's and an elastic job's in full") {
  AgentBackend backend;
  auto detail = [&](size_t hosts, std::vector<std::string> args) {
    args.push_back("train.py");
    auto f = test::makePlan(hostfileOf(hosts, 2), args);
    return backend.rankDetail(f->plan, *f->ctx);
  };
  CHECK(detail(kAutoTreeAboveHosts + 1, {"--launcher", "agent"}) == RankDetail::Slots);
  CHECK(detail(kAutoTreeAboveHosts, {"--launcher", "agent"}) == RankDetail::Commands);
  CHECK(detail(4, {"--launcher", "agent", "--tree_width", "2"}) == RankDetail::Slots);
  CHECK(detail(64, {"--launcher", "agent", "--tree_width", "0"}) == RankDetail::Commands);
  CHECK(detail(64, {"--launcher", "agent", "--elastic_training", "--master_addr", "node-0"}) == RankDetail::Commands);
}

TEST_CASE("ranksByNode is ranksOnNode of every host, in one pass") {
  auto f = test::makePlan("a slots=2\nb slots=3\nc slots=1\n", {"--launcher", "agent", "train.py"});
  const auto byNode = ranksByNode(f->plan);
  REQUIRE(byNode.size() == f->plan.hosts.size());
  for (size_t i = 0; i < byNode.size(); ++i) CHECK(byNode[i] == f->plan.ranksOnNode(static_cast<int>(i)));
}

TEST_CASE("chooseAgentTree: --tree_width auto keeps the star up to kAutoTreeAboveHosts hosts and takes kAutoTreeWidth above",
          "[launcher][agent]") {
  const AgentTreeChoice few = chooseAgentTree(kTreeWidthAuto, kAutoTreeAboveHosts);
  CHECK(few.width == 0);
  CHECK(few.why == strCat("--tree_width auto: ", kAutoTreeAboveHosts, " hosts, at most ", kAutoTreeAboveHosts,
                          ": dsrun dials every agent (the star)"));
  const AgentTreeChoice many = chooseAgentTree(kTreeWidthAuto, kAutoTreeAboveHosts + 1);
  CHECK(many.width == kAutoTreeWidth);
  CHECK(many.why == strCat("--tree_width auto: ", kAutoTreeAboveHosts + 1, " hosts, more than ", kAutoTreeAboveHosts,
                           ": a tree of width ", kAutoTreeWidth, " (--tree_width 0 keeps the star)"));
  CHECK(chooseAgentTree(kTreeWidthAuto, 1).why == strCat("--tree_width auto: 1 host, at most ",
                                                                 kAutoTreeAboveHosts, ": dsrun dials every agent (the star)"));
  // A width given is used as given (an elastic round chooses the same way for each world's host count).
  CHECK(chooseAgentTree(0, 1000).width == 0);
  CHECK(chooseAgentTree(0, 1000).why == "--tree_width 0: dsrun dials every agent (the star)");
  CHECK(chooseAgentTree(4, 2).width == 4);
  CHECK(chooseAgentTree(4, 2).why == "--tree_width 4");
}
