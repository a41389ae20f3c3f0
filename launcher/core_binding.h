#pragma once
// --bind_cores_to_rank: how DeepSpeed's get_numactl_cmd (deepspeed/utils/numa.py) shares cores out among
// the ranks of one node. dsrun applies the result with sched_setaffinity instead of numactl.

#include <string>
#include <string_view>
#include <vector>

namespace dsrun::launcher {

/// DeepSpeed's parse_range_list: "0,2-4,6" -> {0, 2, 3, 4, 6}. Items are a number or LOW-HIGH with
/// LOW <= HIGH, in ascending order without overlap, no blanks. Throws ParseError naming `flag` and text.
std::vector<int> parseRangeList(std::string_view text, const std::string& flag = "--bind_core_list");

/// The cores of local rank `localRank` of `localSize`: an even, contiguous share of `coreList`
/// (total / localSize each, the remainder unused), as DeepSpeed splits them. `host` is for messages.
/// Throws ConfigError when there are fewer cores than ranks.
std::vector<int> coresForLocalRank(const std::vector<int>& coreList, int localSize, int localRank,
                                   const std::string& host);

}  // namespace dsrun::launcher
