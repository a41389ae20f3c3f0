#include "launcher/core_binding.h"

#include <limits>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

int parseCore(std::string_view whole, const std::string& flag, const std::string& item, const std::string& field) {
  long long value = 0;
  bool digitsOnly = !field.empty() && field.find_first_not_of("0123456789") == std::string::npos;
  if (!digitsOnly || !parseInt(field, value) || value > std::numeric_limits<int>::max()) {
    throw ParseError(strCat(flag, " '", whole, "'"), 0,
                     strCat("bad range, expected a number or two numbers separated by a dash, got '", item, "'"));
  }
  return static_cast<int>(value);
}

}  // namespace

std::vector<int> parseRangeList(std::string_view text, const std::string& flag) {
  std::vector<int> cores;
  int last = -1;
  for (const std::string& item : split(text, ',')) {
    const std::vector<std::string> ends = split(item, '-');
    if (ends.size() > 2) {
      throw ParseError(strCat(flag, " '", text, "'"), 0,
                       strCat("bad range, expected a number or two numbers separated by a dash, got '", item, "'"));
    }
    const int low = parseCore(text, flag, item, ends[0]);
    const int high = ends.size() == 2 ? parseCore(text, flag, item, ends[1]) : low;
    if (low > high) {
      throw ParseError(strCat(flag, " '", text, "'"), 0,
                       strCat("bad range, the end must be larger than or equal to the start, got '", item, "'"));
    }
    if (low <= last) {
      throw ParseError(strCat(flag, " '", text, "'"), 0,
                       strCat("sub ranges must be in ascending order without overlap, got '", item, "' after ",
                              last));
    }
    for (int core = low; core <= high; ++core) cores.push_back(core);
    last = high;
  }
  return cores;
}

std::vector<int> coresForLocalRank(const std::vector<int>& coreList, int localSize, int localRank,
                                   const std::string& host) {
  DSRUN_CHECK(localSize > 0 && localRank >= 0 && localRank < localSize, "localRank ", localRank, " of ", localSize);
  const int total = static_cast<int>(coreList.size());
  const int perRank = total / localSize;
  if (perRank < 1) {
    throw ConfigError(strCat("--bind_cores_to_rank: ", total, " core(s) for ", localSize, " ranks on host '", host,
                             "'; at least one core needs to be assigned to each rank"));
  }
  return std::vector<int>(coreList.begin() + perRank * localRank, coreList.begin() + perRank * (localRank + 1));
}

}  // namespace dsrun::launcher
