#pragma once
// Resource selection with DeepSpeed's -i/--include and -e/--exclude syntax:
//   NODE_SPEC[@NODE_SPEC ...],  NODE_SPEC = NAME[:SLOT[,SLOT ...]]
// (runner.py's parse_node_config_list and parse_resource_filter).

#include <string>
#include <string_view>
#include <vector>

namespace dsrun::launcher {

/// One host and the slots used on it.
struct HostSlots {
  std::string host;        ///< host name as the hostfile spells it
  std::vector<int> slots;  ///< slot (GPU) ids, in launch order
};

/// Hosts in hostfile order, each once.
using ResourcePool = std::vector<HostSlots>;

/// Parses a NODE_SPEC list. A host named twice is merged (`a:1@a:0,1` -> a: [0, 1]); slot lists are
/// sorted and deduplicated; an empty slot list means "every slot". Hosts keep their first-appearance
/// order. `flag` (e.g. "--include") prefixes errors: ParseError for a malformed spec or slot.
std::vector<HostSlots> parseNodeSpecs(std::string_view text, const std::string& flag);

/// DeepSpeed's parse_resource_filter: keeps only what `include` names, or removes what `exclude` names
/// (both empty: `pool` unchanged). Hosts left without slots are dropped; the result keeps `pool`'s host
/// order. `includeFlag`/`excludeFlag` name where the strings came from; `poolSource` completes
/// "host 'X' is not ..." in messages ("in /job/hostfile"). Throws ConfigError if both are given or a host or slot is not in `pool` (listing the
/// valid ones), ParseError for a malformed spec.
ResourcePool applyResourceFilter(const ResourcePool& pool, const std::string& include, const std::string& exclude,
                                 const std::string& poolSource, const std::string& includeFlag = "--include",
                                 const std::string& excludeFlag = "--exclude");

/// "0-3", "0,2-3": DeepSpeed's range notation for an ascending id list (its numactl -C argument).
std::string formatRangeList(const std::vector<int>& ids);

}  // namespace dsrun::launcher
