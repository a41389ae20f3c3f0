// What a tree launch costs in CPU and bytes (docs/agent.md "Tree launch"): dsrun building, signing and slicing
// it, and one agent per level reading (digests), expanding its own ranks and slicing its children's launches.
// The per-level figures are what bench/launch_sim.py needs per node. CPU time of this process, so that a busy
// machine inflates the numbers less than wall time would.
// Usage: bench_tree_launch [NODES=10000] [WIDTH=16] [RANKS_PER_NODE=8] [THREADS=the cores]
#include <time.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_clock.h"
#include "launcher/backends/agent/agent_tree_launch.h"
#include "launcher/backends/agent/agent_tree_plan.h"
#include "proto/tree_launch_builder.h"
#include "proto/tree_launch_expander.h"
#include "proto/tree_subtree.h"
#include "tls/certificate_issuer.h"
#include "tls/tree_signature.h"

using namespace dsrun;
using namespace dsrun::launcher;

namespace {

using dsrun::bench::cpuMs;
using dsrun::bench::wallMs;

/// A plan shaped like a DeepSpeed job's: per rank a python command with --local_rank and ~15 variables, of
/// which RANK, LOCAL_RANK and CROSS_RANK differ per rank.
WorldPlan plan(size_t nodes, int ranksPerNode) {
  WorldPlan p;
  p.jobId = "bench-job";
  for (size_t node = 0; node < nodes; ++node) {
    p.hosts.push_back({"node-" + std::to_string(node), std::vector<int>(static_cast<size_t>(ranksPerNode))});
    for (int local = 0; local < ranksPerNode; ++local) {
    const int rank = static_cast<int>(node) * ranksPerNode + local;
    PlannedRank k;
    k.rank = rank;
    k.localRank = local;
    k.nodeRank = static_cast<int>(node);
    k.host = p.hosts.back().host;
    k.argv = {"/usr/bin/python3", "-u", "/work/job/train.py", "--deepspeed_config=ds.json"};
    k.argv.push_back("--local_rank=" + std::to_string(local));
    const std::pair<std::string, std::string> env[] = {
        {"CROSS_RANK", std::to_string(node)}, {"CROSS_SIZE", std::to_string(nodes)},
        {"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}, {"DSRUN_JOB_ID", "bench-job"},
        {"LOCAL_RANK", std::to_string(local)}, {"LOCAL_SIZE", std::to_string(ranksPerNode)},
        {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, {"NCCL_DEBUG", "WARN"}, {"NCCL_IB_HCA", "mlx5"},
        {"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"PYTHONPATH", "/work/job"}, {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(nodes * static_cast<size_t>(ranksPerNode))}};
    for (const auto& [name, value] : env) k.env[name] = value;
    for (int c = 0; c < 4; ++c) k.cores.push_back(local * 4 + c);
    p.ranks.push_back(std::move(k));
    }
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t nodes = argc > 1 ? std::stoul(argv[1]) : 10000;
  const int width = argc > 2 ? std::stoi(argv[2]) : 16;
  const int ranksPerNode = argc > 3 ? std::stoi(argv[3]) : 8;
  const unsigned threads = argc > 4 ? static_cast<unsigned>(std::stoul(argv[4])) : std::thread::hardware_concurrency();
  const proto::Sha256 sha = [](std::string_view d) { return tls::sha256(d); };
  const AgentTreePlan tree = planAgentTree(nodes, width);
  const WorldPlan world = plan(nodes, ranksPerNode);
  NodeLaunchSettings settings;
  settings.cwd = "/work/job";
  double t = cpuMs();
  std::vector<proto::TreeLaunchNode> planned = treeLaunchNodes(world, tree, 29600, settings);
  const double requestsMs = cpuMs() - t;
  size_t starBytes = 0;
  for (const auto& node : planned) starBytes += node.request.ByteSizeLong();
  tls::PKeyPtr caKey = tls::makeKey();
  tls::X509Ptr ca = tls::issueCertificate({tls::CertKind::Ca, "bench CA", {}, {}}, caKey.get(), nullptr, nullptr);
  tls::PKeyPtr key = tls::makeKey();
  tls::X509Ptr cert = tls::issueCertificate({tls::CertKind::Client, "bench launcher", {}, {}}, key.get(), ca.get(), caKey.get());
  const tls::TreeSigner signer(std::move(cert), std::move(key));
  std::unique_ptr<X509_STORE, tls::OpensslDeleter<X509_STORE, X509_STORE_free>> trust(X509_STORE_new());
  X509_STORE_add_cert(trust.get(), ca.get());

  const proto::TreeLaunchStamp stamp{0, 300, static_cast<uint32_t>(width), "bench"};
  t = cpuMs();
  const proto::TreeLaunchContent content = proto::buildTreeLaunch(planned, stamp, sha);
  const double buildMs = cpuMs() - t;
  t = cpuMs();
  const std::string signature = signer.sign(proto::treeSignedMessage(content.root));
  const double signMs = cpuMs() - t;
  t = cpuMs();
  std::vector<wire::TreeLaunch> roots;
  for (size_t r : proto::treeRoots(content.subtreeEnds)) {
    roots.push_back(proto::rootTreeLaunch(content, r, signature, signer.certificateDer()));
  }
  const double sliceMs = cpuMs() - t;
  size_t rootBytes = 0;
  for (const auto& r : roots) rootBytes += r.ByteSizeLong();
  // What dsrun does now: the requests made as the parts are built, on 1 and on `threads` threads (wall time too:
  // that is what the threads shorten), the same bytes as above.
  const std::vector<proto::TreeLaunchNode> shape = treeLaunchShape(world, tree, 29600);
  for (unsigned n : {1u, threads}) {
    const double wall0 = wallMs();
    t = cpuMs();
    const std::vector<RootTreeLaunch> built = signedTreeLaunches(world, shape, settings, stamp, signer, n);
    const double cpu = cpuMs() - t;
    const double wall = wallMs() - wall0;
    bool same = built.size() == roots.size();
    for (size_t i = 0; same && i < built.size(); ++i) {
      // The signatures differ (ECDSA is randomized): compare the rest.
      wire::TreeLaunch a = built[i].launch, b = roots[i];
      a.clear_signature();
      b.clear_signature();
      same = a.SerializeAsString() == b.SerializeAsString();
    }
    std::printf("dsrun, requests made while building, %u thread(s): %.1f ms CPU, %.1f ms wall (requests, build, sign, "
                "slice)%s\n", n, cpu, wall, same ? "" : "; NOT THE SAME LAUNCHES");
    if (!same) return 1;
  }
  {
    // dsrun's planning of every rank (planWorld's second half, before anything is dialled), with a few exports.
    WorldPlan planned = world;
    planned.exports = {{"NCCL_DEBUG", "WARN"}, {"NCCL_IB_HCA", "mlx5"}, {"PATH", "/usr/local/bin:/usr/bin:/bin"},
                       {"PYTHONPATH", "/work/job"}};
    planned.masterAddr = "10.0.0.1";
    RankProgram program{"/work/job/train.py", {"--deepspeed_config=ds.json"}, {}};
    const double wall0 = wallMs();
    t = cpuMs();
    planRanks(planned, program);
    std::printf("dsrun: planRanks %.1f ms (CPU) for %zu ranks, %.1f ms wall\n", cpuMs() - t, planned.ranks.size(),
                wallMs() - wall0);
    // A tree launch now: the ranks' slots before the dial (RankDetail::Slots), and each node's commands planned
    // as its request is made by the build (withCommand), here on one thread; the same launch as from `planned`.
    WorldPlan slots = planned;
    t = cpuMs();
    planRanks(slots, program, RankDetail::Slots);
    std::printf("dsrun: planRanks of slots %.1f ms (CPU) for %zu ranks\n", cpuMs() - t, slots.ranks.size());
    const std::vector<proto::TreeLaunchNode> plannedShape = treeLaunchShape(planned, tree, 29600);
    t = cpuMs();
    const std::vector<RootTreeLaunch> fromFull = signedTreeLaunches(planned, plannedShape, settings, stamp, signer, 1);
    const double fullMs = cpuMs() - t;
    t = cpuMs();
    const std::vector<RootTreeLaunch> fromSlots = signedTreeLaunches(slots, plannedShape, settings, stamp, signer, 1);
    const double slotsMs = cpuMs() - t;
    bool same = fromFull.size() == fromSlots.size();
    for (size_t i = 0; same && i < fromFull.size(); ++i) {
      wire::TreeLaunch a = fromFull[i].launch, b = fromSlots[i].launch;
      a.clear_signature();
      b.clear_signature();
      same = a.SerializeAsString() == b.SerializeAsString();
    }
    std::printf("dsrun, planned ranks' requests made while building, 1 thread(s): %.1f ms CPU; commands planned while "
                "building, 1 thread(s): %.1f ms CPU%s\n", fullMs, slotsMs, same ? "" : "; NOT THE SAME LAUNCHES");
    if (!same) return 1;
  }
  t = cpuMs();
  size_t indexed = 0;
  for (size_t i = 0; i < nodes; ++i) indexed += world.ranksOnNode(static_cast<int>(i)).size();
  const double scanMs = cpuMs() - t;
  t = cpuMs();
  indexed += ranksByNode(world).size();
  std::printf("dsrun: each host's ranks, WorldPlan::ranksOnNode per host %.1f ms, ranksByNode %.2f ms (CPU)\n", scanMs,
              cpuMs() - t);
  std::printf("%zu nodes x %d ranks, width %d, %d levels\n", nodes, ranksPerNode, width, tree.levels());
  std::printf("star: %zu request bytes in all, %zu per node, all sent by dsrun\n", starBytes, starBytes / nodes);
  std::printf("dsrun: requests %.1f ms, build %.1f ms, sign %.2f ms, slice %.1f ms (CPU); sends %zu bytes to %zu "
              "roots\n", requestsMs, buildMs, signMs, sliceMs, rootBytes, roots.size());
  // Down the first path: the first root, its first child, ... to a leaf.
  wire::TreeLaunch launch = roots.front();
  for (int level = 0;; ++level) {
    const std::string frame = launch.SerializeAsString();
    t = cpuMs();
    wire::TreeLaunch parsed;
    parsed.ParseFromString(frame);
    const proto::ReceivedTreeLaunch received = proto::readTreeLaunch(parsed, sha);
    const double readMs = cpuMs() - t;
    t = cpuMs();
    const std::string verdict = tls::verifyTreeSignature(trust.get(), parsed.launcher_certificate(),
                                                         proto::treeSignedMessage(received.root), parsed.signature());
    const double verifyMs = cpuMs() - t;
    if (!verdict.empty()) {
      std::fprintf(stderr, "bench_tree_launch: level %d: %s\n", level, verdict.c_str());
      return 1;
    }
    t = cpuMs();
    const wire::LaunchRequest own = proto::ownLaunchRequest(received);
    std::vector<proto::ChildTreeLaunch> children = proto::childTreeLaunches(parsed, received);
    const double expandMs = cpuMs() - t;
    size_t sent = 0;
    for (const auto& c : children) sent += c.launch.ByteSizeLong();
    std::printf("level %d agent: receives %zu bytes (%d nodes, %d proof levels); parse+digests %.2f ms, signature "
                "%.2f ms, expand own %d ranks + %zu children %.2f ms (CPU); sends %zu bytes\n",
                level, frame.size(), parsed.subtree_size(), parsed.proof_size(), readMs, verifyMs, own.ranks_size(),
                children.size(), expandMs, sent);
    if (children.empty()) break;
    launch = std::move(children.front().launch);
  }
  return 0;
}
