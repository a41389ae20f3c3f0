#include "proto/tree_digest.h"

#include "common/error.h"

namespace dsrun::proto {
namespace {

// Domain separation: a part, an inner node and the root can never hash the same bytes.
constexpr std::string_view kPartTag("dsrun-tree-part\0", 16);
constexpr char kNodeTag = '\x01';
constexpr char kRootTag = '\x02';
constexpr std::string_view kSignedTag("dsrun-tree-launch-v1\0", 21);

/// The digests of one proof level with `digest` put back at `position`.
std::vector<const std::string*> withPathDigest(const wire::TreeProofLevel& level, const std::string& digest,
                                               size_t index) {
  if (level.position() > static_cast<uint32_t>(level.child_digests_size())) {
    throw Error(strCat("tree launch: proof level ", index, ": position ", level.position(), " past its ",
                       level.child_digests_size(), " digests"));
  }
  std::vector<const std::string*> out;
  out.reserve(static_cast<size_t>(level.child_digests_size()) + 1);
  for (int i = 0; i < level.child_digests_size(); ++i) {
    if (level.child_digests(i).size() != kTreeDigestBytes) {
      throw Error(strCat("tree launch: proof level ", index, ": a digest of ", level.child_digests(i).size(),
                         " bytes (expected ", kTreeDigestBytes, ")"));
    }
    if (static_cast<uint32_t>(i) == level.position()) out.push_back(&digest);
    out.push_back(&level.child_digests(i));
  }
  if (level.position() == static_cast<uint32_t>(level.child_digests_size())) out.push_back(&digest);
  return out;
}

}  // namespace

std::string treePartHash(std::string_view part, const Sha256& sha256) {
  std::string input(kPartTag);
  input.append(part);
  return sha256(input);
}

std::string treeNodeDigest(const std::string& partHash, const std::vector<const std::string*>& childDigests,
                           const Sha256& sha256) {
  std::string input(1, kNodeTag);
  input.reserve(1 + kTreeDigestBytes * (1 + childDigests.size()));
  input += partHash;
  for (const std::string* d : childDigests) input += *d;
  return sha256(input);
}

std::string treeRoot(std::string_view header, const std::vector<const std::string*>& rootDigests,
                     const Sha256& sha256) {
  std::string input(1, kRootTag);
  input += sha256(header);
  for (const std::string* d : rootDigests) input += *d;
  return sha256(input);
}

std::vector<std::string> treeDigests(const std::vector<std::string>& partHashes, const std::vector<int>& parents,
                                     const Sha256& sha256) {
  DSRUN_CHECK_EQ(partHashes.size(), parents.size(), "part hashes vs parents");
  const size_t n = partHashes.size();
  std::vector<std::vector<size_t>> children(n);
  for (size_t i = 0; i < n; ++i) {
    DSRUN_CHECK(parents[i] >= -1 && parents[i] < static_cast<int>(i), "node ", i, " parent ", parents[i]);
    if (parents[i] >= 0) children[static_cast<size_t>(parents[i])].push_back(i);
  }
  // Pre-order: every child comes after its parent, so walking backwards meets the children's digests first.
  std::vector<std::string> digests(n);
  for (size_t i = n; i-- > 0;) {
    std::vector<const std::string*> childDigests;
    childDigests.reserve(children[i].size());
    for (size_t c : children[i]) childDigests.push_back(&digests[c]);
    digests[i] = treeNodeDigest(partHashes[i], childDigests, sha256);
  }
  return digests;
}

std::string treeRootFromProof(std::string_view header, const std::string& receiverDigest,
                              const google::protobuf::RepeatedPtrField<wire::TreeProofLevel>& proof,
                              const Sha256& sha256) {
  if (proof.empty()) throw Error("tree launch: no proof (at least the level of the roots)");
  std::string digest = receiverDigest;
  for (size_t index = static_cast<size_t>(proof.size()); index-- > 1;) {
    const wire::TreeProofLevel& level = proof.Get(static_cast<int>(index));
    if (level.part_hash().size() != kTreeDigestBytes) {
      throw Error(strCat("tree launch: proof level ", index, ": a part hash of ", level.part_hash().size(), " bytes"));
    }
    digest = treeNodeDigest(level.part_hash(), withPathDigest(level, digest, index), sha256);
  }
  if (!proof.Get(0).part_hash().empty()) throw Error("tree launch: proof level 0 (the roots) carries a part hash");
  return treeRoot(header, withPathDigest(proof.Get(0), digest, 0), sha256);
}

std::string treeSignedMessage(const std::string& root) {
  std::string message(kSignedTag);
  message += root;
  return message;
}

}  // namespace dsrun::proto
