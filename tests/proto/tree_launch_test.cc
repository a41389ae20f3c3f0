// A tree launch carries what every node's star LaunchRequest carries, signed once: built by dsrun from the
// per-node requests, each node's expansion gives back its request byte for byte and its children's launches,
// and a node refuses what was changed on the way, a launch from the wrong peer, or one it has seen before.
#include <catch2/catch.hpp>
#include <deque>
#include <random>
#include <set>

#include "common/error.h"
#include "proto/tree_acceptance.h"
#include "proto/tree_delta.h"
#include "proto/tree_digest.h"
#include "proto/tree_launch_builder.h"
#include "proto/tree_launch_expander.h"
#include "proto/rank_env.h"
#include "proto/tree_subtree.h"
#include "tests/common/temp_dir.h"
#include "tests/tls/test_pki.h"
#include "tls/ssl_context.h"
#include "tls/tree_signature.h"

using Catch::Matchers::Contains;
using namespace dsrun;
using namespace dsrun::proto;

namespace {

const Sha256 kSha = [](std::string_view data) { return tls::sha256(data); };
constexpr int64_t kNow = 1'800'000'000'000'000;

/// A random forest in pre-order: each node's parent is a node on the path to the previous one, or none.
std::vector<int> randomForest(size_t n, std::mt19937& rng) {
  std::vector<int> parents;
  std::vector<int> path;
  for (size_t i = 0; i < n; ++i) {
    const int depth = std::uniform_int_distribution<int>(0, static_cast<int>(path.size()))(rng);
    path.resize(static_cast<size_t>(depth));
    parents.push_back(path.empty() ? -1 : path.back());
    path.push_back(static_cast<int>(i));
  }
  return parents;
}

/// Star LaunchRequests shaped like the launcher's: shared argv/env/cwd, per-rank RANK/LOCAL_RANK and
/// --local_rank, cores, plus the odd rank with an extra variable, a longer argv or another cwd.
std::vector<TreeLaunchNode> makeNodes(const std::vector<int>& parents, int ranksPerNode, std::mt19937& rng) {
  std::vector<TreeLaunchNode> nodes;
  int rank = 0;
  for (size_t i = 0; i < parents.size(); ++i) {
    TreeLaunchNode node;
    node.host = "node-" + std::to_string(i);
    node.address = "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250);
    node.port = 29600;
    node.parent = parents[i];
    node.request.set_job_id("job-1");
    node.request.mutable_log()->set_each_rank_log_dir("/logs");
    node.request.mutable_log()->set_tag("20261127");
    node.request.set_kill_grace_s(30);
    node.request.set_progress_interval_s(0.25);
    for (int local = 0; local < ranksPerNode; ++local, ++rank) {
      wire::RankLaunch* r = node.request.add_ranks();
      r->set_rank(rank);
      r->set_local_rank(local);
      for (const char* word : {"python3", "-u", "train.py"}) r->add_argv(word);
      r->add_argv("--local_rank=" + std::to_string(local));
      r->add_argv(std::string("\xff\x00raw", 5));  // bytes, not text
      const int odd = std::uniform_int_distribution<int>(0, 9)(rng);
      if (odd == 0) r->add_argv("--extra");
      addEnv(*r, "CROSS_RANK", std::to_string(i));
      if (odd == 1) addEnv(*r, "ONLY_HERE", "1");
      addEnv(*r, "LOCAL_RANK", std::to_string(local));
      addEnv(*r, "MASTER_ADDR", "10.0.0.0");
      addEnv(*r, "NCCL_DEBUG", "INFO");
      addEnv(*r, "RANK", std::to_string(rank));
      r->set_cwd(odd == 2 ? "/elsewhere" : "/work");
      if (odd != 3) {
        for (int c = 0; c < 2; ++c) r->add_cores(local * 2 + c);
      }
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

struct Signed {
  TreeLaunchContent content;
  std::string signature;
  std::string certificate;
};

struct Cluster {
  TempDir tmp;
  testing::TestPki pki{tmp.path()};
  tls::TreeSigner signer{pki.launcher()};
  std::unique_ptr<X509_STORE, tls::OpensslDeleter<X509_STORE, X509_STORE_free>> trust{
      tls::makeTrustStore(pki.node("any"), "--tls_dir")};

  Signed sign(const std::vector<TreeLaunchNode>& nodes, uint32_t width = 0) {
    Signed s{buildTreeLaunch(nodes, {kNow, 300, width, "dsrun test"}, kSha), {}, signer.certificateDer()};
    s.signature = signer.sign(treeSignedMessage(s.content.root));
    return s;
  }
  std::string verify(const wire::TreeLaunch& launch, const ReceivedTreeLaunch& r) {
    return tls::verifyTreeSignature(trust.get(), launch.launcher_certificate(), treeSignedMessage(r.root),
                                    launch.signature());
  }
};

struct Delivery {
  size_t node;             ///< index into the planned nodes
  wire::TreeLaunch launch; ///< what it received
};

/// Every node's received launch, delivering from the roots down as the agents would.
std::vector<Delivery> deliverAll(const Signed& s, const std::vector<TreeLaunchNode>& nodes) {
  std::map<std::string, size_t> byHost;
  for (size_t i = 0; i < nodes.size(); ++i) byHost[nodes[i].host] = i;
  std::deque<Delivery> queue;
  for (size_t root : treeRoots(s.content.subtreeEnds)) {
    queue.push_back({root, rootTreeLaunch(s.content, root, s.signature, s.certificate)});
  }
  std::vector<Delivery> out;
  while (!queue.empty()) {
    Delivery d = std::move(queue.front());
    queue.pop_front();
    const ReceivedTreeLaunch r = readTreeLaunch(d.launch, kSha);
    for (ChildTreeLaunch& child : childTreeLaunches(d.launch, r)) {
      const size_t c = byHost.at(child.host);
      CHECK(nodes[c].parent == static_cast<int>(d.node));
      CHECK(child.address == nodes[c].address);
      CHECK(child.port == nodes[c].port);
      queue.push_back({c, std::move(child.launch)});
    }
    out.push_back(std::move(d));
  }
  return out;
}

TreeIdentity launcherPeer() { return {true, nullptr, "dsrun"}; }
TreeIdentity nodePeer(const std::string& host) {
  return {false, [host](const std::string& h) { return h == host; }, "agent " + host};
}

}  // namespace

TEST_CASE("every node expands exactly the star's LaunchRequest, over varied trees and worlds") {
  Cluster cluster;
  std::mt19937 rng(21);
  for (size_t n : {1, 2, 3, 7, 40, 200}) {
    for (int ranksPerNode : {1, 3}) {
      const std::vector<TreeLaunchNode> nodes = makeNodes(randomForest(n, rng), ranksPerNode, rng);
      const Signed s = cluster.sign(nodes);
      const std::vector<Delivery> deliveries = deliverAll(s, nodes);
      REQUIRE(deliveries.size() == n);
      std::set<size_t> reached;
      std::multiset<int> ranks;
      for (const Delivery& d : deliveries) {
        const ReceivedTreeLaunch r = readTreeLaunch(d.launch, kSha);
        CHECK(r.root == s.content.root);
        CHECK(cluster.verify(d.launch, r).empty());
        CHECK_NOTHROW(checkTreeLaunchFor(r, nodePeer(nodes[d.node].host),
                                         nodes[d.node].parent < 0 ? launcherPeer()
                                                                  : nodePeer(nodes[static_cast<size_t>(nodes[d.node].parent)].host),
                                         kNow));
        const wire::LaunchRequest own = ownLaunchRequest(r);
        CHECK(own.SerializeAsString() == nodes[d.node].request.SerializeAsString());
        for (const auto& rank : own.ranks()) ranks.insert(rank.rank());
        reached.insert(d.node);
      }
      CHECK(reached.size() == n);  // each node exactly once
      REQUIRE(ranks.size() == n * static_cast<size_t>(ranksPerNode));
      int expected = 0;
      for (int rank : ranks) CHECK(rank == expected++);  // every rank exactly once
    }
  }
}

TEST_CASE("rankDelta stores only what differs, and applyRankDelta refuses a delta for another template") {
  wire::RankLaunch t;
  for (const char* w : {"python3", "train.py", "--local_rank=0"}) t.add_argv(w);
  addEnv(t, "LOCAL_RANK", "0");
  addEnv(t, "RANK", "0");
  t.set_cwd("/w");
  wire::RankLaunch r = t;
  r.set_rank(9);
  r.set_local_rank(1);
  r.set_argv(2, "--local_rank=1");
  r.mutable_env(0)->set_value("1");
  r.mutable_env(1)->set_value("9");
  r.add_cores(3);
  const wire::RankDelta d = rankDelta(t, r);
  CHECK(d.argv_index_size() == 1);
  CHECK(d.env_index_size() == 2);
  CHECK_FALSE(d.argv_replaced());
  CHECK_FALSE(d.env_replaced());
  CHECK_FALSE(d.cwd_replaced());
  CHECK(applyRankDelta(t, d).SerializeAsString() == r.SerializeAsString());

  wire::RankLaunch shorter = t;
  shorter.mutable_argv()->RemoveLast();
  CHECK_THROWS_WITH(applyRankDelta(shorter, d), Contains("argv position 2 is past the template's 2 entries"));
  wire::RankDelta broken = d;
  broken.add_env_index(0);
  CHECK_THROWS_WITH(applyRankDelta(t, broken), Contains("3 env positions for 2 values"));
}

TEST_CASE("a changed part, header or proof fails the signature check; a malformed one does not parse") {
  Cluster cluster;
  std::mt19937 rng(7);
  const std::vector<TreeLaunchNode> nodes = makeNodes({-1, 0, 1, 1, 0}, 2, rng);
  const Signed s = cluster.sign(nodes);
  const wire::TreeLaunch good = rootTreeLaunch(s.content, 0, s.signature, s.certificate);
  REQUIRE(cluster.verify(good, readTreeLaunch(good, kSha)).empty());

  SECTION("a descendant's command changed on the way") {
    wire::TreeLaunch forged = good;
    wire::TreeNodePart part;
    REQUIRE(part.ParseFromString(forged.subtree(2).part()));
    part.mutable_ranks(0)->add_argv_index(0);
    part.mutable_ranks(0)->add_argv_value("rm -rf /");
    forged.mutable_subtree(2)->set_part(part.SerializeAsString());
    CHECK_THAT(cluster.verify(forged, readTreeLaunch(forged, kSha)), Contains("does not match the launch"));
  }
  SECTION("the shared template changed") {
    wire::TreeLaunch forged = good;
    wire::TreeLaunchHeader header;
    REQUIRE(header.ParseFromString(forged.header()));
    header.mutable_rank_template()->set_argv(0, "/bin/sh");
    forged.set_header(header.SerializeAsString());
    CHECK_THAT(cluster.verify(forged, readTreeLaunch(forged, kSha)), Contains("does not match the launch"));
  }
  SECTION("a node moved under another parent") {
    wire::TreeLaunch forged = good;
    forged.mutable_subtree(3)->set_parent(0);  // node 3 was node 1's child
    CHECK_THROWS_WITH(readTreeLaunch(forged, kSha), Contains("does not name its parent"));
  }
  SECTION("a proof digest replaced") {
    std::vector<TreeLaunchNode> twoRoots = nodes;
    twoRoots[4].parent = -1;
    const Signed s2 = cluster.sign(twoRoots);
    wire::TreeLaunch forged = rootTreeLaunch(s2.content, 0, s.signature, s.certificate);  // old signature
    CHECK_THAT(cluster.verify(forged, readTreeLaunch(forged, kSha)), Contains("does not match the launch"));
    forged.mutable_proof(0)->set_child_digests(0, "short");
    CHECK_THROWS_WITH(readTreeLaunch(forged, kSha), Contains("a digest of 5 bytes"));
  }
  SECTION("not in pre-order") {
    wire::TreeLaunch forged = good;
    forged.mutable_subtree(1)->set_parent(-1);
    CHECK_THROWS_WITH(readTreeLaunch(forged, kSha), Contains("only the receiver may lack one"));
  }
}

TEST_CASE("a node accepts its launch only from the parent it names, and a root only from a launcher") {
  Cluster cluster;
  std::mt19937 rng(3);
  const std::vector<TreeLaunchNode> nodes = makeNodes({-1, 0, 1}, 1, rng);
  const Signed s = cluster.sign(nodes);
  const std::vector<Delivery> d = deliverAll(s, nodes);
  const ReceivedTreeLaunch root = readTreeLaunch(d[0].launch, kSha);
  const ReceivedTreeLaunch leaf = readTreeLaunch(d[2].launch, kSha);
  REQUIRE(leaf.parts[0].host() == "node-2");

  CHECK_NOTHROW(checkTreeLaunchFor(leaf, nodePeer("node-2"), nodePeer("node-1"), kNow));
  CHECK_THROWS_WITH(checkTreeLaunchFor(leaf, nodePeer("node-2"), nodePeer("node-0"), kNow),
                    Contains("the launch names node-1 as node-2's parent, and the peer is not it"));
  CHECK_NOTHROW(checkTreeLaunchFor(leaf, nodePeer("node-2"), nodePeer("node-0"), kNow, TreeSender::Adopter));  // re-attached to its grandparent
  CHECK_NOTHROW(checkTreeLaunchFor(leaf, nodePeer("node-2"), launcherPeer(), kNow, TreeSender::Adopter));  // dsrun re-fans
  CHECK_THROWS_WITH(checkTreeLaunchFor(leaf, nodePeer("node-2"), nodePeer("node-3"), kNow, TreeSender::Rebind),
                    Contains("(or an ancestor), and the peer is not it"));
  CHECK_THROWS_WITH(checkTreeLaunchFor(leaf, nodePeer("node-2"), launcherPeer(), kNow), Contains("and the peer is not it"));
  CHECK_THROWS_WITH(checkTreeLaunchFor(leaf, nodePeer("node-1"), nodePeer("node-1"), kNow),
                    Contains("it is for host 'node-2', which this agent's certificate does not name (agent node-1)"));
  CHECK_NOTHROW(checkTreeLaunchFor(root, nodePeer("node-0"), launcherPeer(), kNow));
  CHECK_THROWS_WITH(checkTreeLaunchFor(root, nodePeer("node-0"), nodePeer("node-1"), kNow),
                    Contains("only a launcher may send it its launch"));
}

TEST_CASE("a replayed or stale tree launch is refused") {
  Cluster cluster;
  std::mt19937 rng(5);
  const std::vector<TreeLaunchNode> nodes = makeNodes({-1}, 1, rng);
  const Signed s = cluster.sign(nodes);
  const ReceivedTreeLaunch r = readTreeLaunch(rootTreeLaunch(s.content, 0, s.signature, s.certificate), kSha);
  const int64_t second = 1'000'000;

  CHECK_THROWS_WITH(checkTreeLaunchFor(r, nodePeer("node-0"), launcherPeer(), kNow + 301 * second),
                    Contains("outside its 300 s window"));
  CHECK_THROWS_WITH(checkTreeLaunchFor(r, nodePeer("node-0"), launcherPeer(), kNow - 301 * second),
                    Contains("outside its 300 s window"));
  // Re-binding a job that runs here: it passed the window when it started, and may run for days.
  CHECK_NOTHROW(checkTreeLaunchFor(r, nodePeer("node-0"), launcherPeer(), kNow + 3600 * second, TreeSender::Rebind));

  TreeJobIds seen;
  seen.admit(r.header, kNow);
  CHECK_THROWS_WITH(seen.admit(r.header, kNow + 10 * second), Contains("already ran that job id"));
  wire::TreeLaunchHeader other = r.header;
  other.set_job_id("job-2");
  seen.admit(other, kNow + 10 * second);
  CHECK(seen.size() == 2);
  // Past their window job-1 and job-2 could not pass checkTreeLaunchFor any more, so they are forgotten.
  other.set_job_id("job-3");
  other.set_issued_unix_us(kNow + 302 * second);
  seen.admit(other, kNow + 302 * second);
  CHECK(seen.size() == 1);
}

TEST_CASE("with --rendezvous agent, every node learns rank 0's agent, and only that node is told it is the root") {
  Cluster cluster;
  std::mt19937 rng(59);
  std::vector<TreeLaunchNode> nodes = makeNodes({-1, 0, 0, 2, -1, 4}, 2, rng);
  wire::StoreRendezvous rendezvous;
  rendezvous.set_root_host("node-0");
  rendezvous.set_root_address("10.0.0.0");
  rendezvous.set_root_port(29600);
  for (auto& node : nodes) *node.request.mutable_rendezvous() = rendezvous;
  const Signed s = cluster.sign(nodes, 2);
  std::set<size_t> roots;
  for (const Delivery& d : deliverAll(s, nodes)) {
    const wire::LaunchRequest own = ownLaunchRequest(readTreeLaunch(d.launch, kSha));
    REQUIRE(own.has_rendezvous());
    CHECK(own.rendezvous().root_host() == "node-0");
    CHECK(own.rendezvous().root_address() == "10.0.0.0");
    CHECK(own.rendezvous().root_port() == 29600);
    if (own.rendezvous().root()) roots.insert(d.node);
  }
  CHECK(roots == std::set<size_t>{0});
  // A launch without the flag carries none: the agents keep rank 0's TCPStore.
  const std::vector<TreeLaunchNode> plain = makeNodes({-1, 0}, 1, rng);
  for (const Delivery& d : deliverAll(cluster.sign(plain), plain)) {
    CHECK_FALSE(ownLaunchRequest(readTreeLaunch(d.launch, kSha)).has_rendezvous());
  }
}
