#pragma once
// How a tree launch is hashed so that dsrun signs it once and every node can check its own share
// (docs/agent.md "Tree launch: authentication"). The digests follow the launch tree itself:
//   part_hash(n) = H("dsrun-tree-part" 0x00 || part bytes of n)
//   digest(n)    = H(0x01 || part_hash(n) || digest(child_1) || ... || digest(child_m))
//   root         = H(0x02 || H(header bytes) || digest(root_1) || ... || digest(root_r))
// with H = SHA-256 (passed in: the hash itself is tls/'s, this module only says what is hashed). A node that
// received its subtree recomputes the digests of all of it from the parts it must forward anyway, and climbs
// TreeLaunch.proof (the other children's digests at each ancestor) to the root that dsrun signed: O(width x
// depth) extra bytes per message, one signature for the whole launch.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/agent.pb.h"

namespace dsrun::proto {

/// SHA-256 of its argument (32 bytes); tls::sha256 in dsrun and dsrun-agent.
using Sha256 = std::function<std::string(std::string_view)>;

inline constexpr size_t kTreeDigestBytes = 32;

/// part_hash of one serialized TreeNodePart.
std::string treePartHash(std::string_view part, const Sha256& sha256);

/// digest(n) from its part hash and its children's digests, in order.
std::string treeNodeDigest(const std::string& partHash, const std::vector<const std::string*>& childDigests,
                           const Sha256& sha256);

/// The root over the header and the roots' digests, in order.
std::string treeRoot(std::string_view header, const std::vector<const std::string*>& rootDigests, const Sha256& sha256);

/// digest(n) of every node of a pre-order list, where parents[i] is the index of node i's parent in the list
/// (always < i) or -1 for a node without one in the list (a root of the forest, or the receiver).
/// DSRUN_CHECKs the order: the callers validate lists they received first (treeParentsOf).
std::vector<std::string> treeDigests(const std::vector<std::string>& partHashes, const std::vector<int>& parents,
                                     const Sha256& sha256);

/// The root `proof` leads to from the receiver's digest: from the last level (the receiver's parent) up to
/// level 0 (the forest). Throws dsrun::Error when the proof is malformed (no levels, a digest that is not 32
/// bytes, a position past the digests); a proof for other content just gives another root, which the
/// signature check then refuses.
std::string treeRootFromProof(std::string_view header, const std::string& receiverDigest,
                              const google::protobuf::RepeatedPtrField<wire::TreeProofLevel>& proof,
                              const Sha256& sha256);

/// The bytes dsrun signs for a launch with this root: a domain tag, so that no other signature by a launcher
/// key can pass for a tree launch.
std::string treeSignedMessage(const std::string& root);

}  // namespace dsrun::proto
