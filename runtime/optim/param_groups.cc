#include "runtime/optim/param_groups.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dsrt::optim {

std::vector<GroupRun> groupRunsOf(std::vector<ParamSpan> spans, int64_t numel) {
  spans.erase(std::remove_if(spans.begin(), spans.end(), [](const ParamSpan& s) { return s.numel == 0; }),
              spans.end());
  std::sort(spans.begin(), spans.end(), [](const ParamSpan& a, const ParamSpan& b) { return a.offset < b.offset; });
  std::vector<GroupRun> runs;
  int64_t covered = 0;
  for (const ParamSpan& s : spans) {
    if (s.offset < covered || s.numel < 0 || s.offset + s.numel > numel || s.group < 0) {
      throw std::invalid_argument("param groups: span [" + std::to_string(s.offset) + ", " +
                                  std::to_string(s.offset + s.numel) + ") of group " + std::to_string(s.group) +
                                  " overlaps another or lies outside [0, " + std::to_string(numel) + ")");
    }
    if (!runs.empty() && runs.back().group == s.group) {
      runs.back().end = s.offset + s.numel;  // padding between two spans of one group joins them
    } else if (runs.empty()) {
      runs.push_back({s.offset + s.numel, s.group});  // leading padding joins the first run
    } else {
      runs.back().end = s.offset;  // padding before a new group stays with the previous one
      runs.push_back({s.offset + s.numel, s.group});
    }
    covered = s.offset + s.numel;
  }
  if (runs.empty()) {
    return {{numel, 0}};
  }
  runs.back().end = numel;  // trailing padding
  return runs;
}

}  // namespace dsrt::optim
