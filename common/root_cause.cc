#include "common/root_cause.h"

#include "common/error.h"
#include "common/strings.h"

namespace dsrun {
namespace {

constexpr size_t kNamedConsequences = 3;

std::string plural(size_t n, const char* word) { return strCat(n, " ", word, n == 1 ? "" : "s"); }

}  // namespace

size_t earliestFailure(const std::vector<TimedFailure>& failures) {
  DSRUN_CHECK(!failures.empty(), "earliestFailure of no failure");
  size_t best = 0;
  for (size_t i = 1; i < failures.size(); ++i) {
    if (failures[i].timeUs < failures[best].timeUs) best = i;
  }
  return best;
}

std::string rootCauseLine(const std::vector<TimedFailure>& failures, size_t terminated) {
  const size_t first = earliestFailure(failures);
  std::string line = strCat("dsrun: ", failures[first].what, "; terminated ", plural(terminated, "other rank"));
  if (failures.size() == 1) return line;
  std::vector<std::string> later;
  for (size_t i = 0; i < failures.size(); ++i) {
    if (i != first && later.size() < kNamedConsequences) later.push_back(failures[i].what);
  }
  const size_t more = failures.size() - 1 - later.size();
  return strCat(line, "; ", plural(failures.size() - 1, "later failure"), " counted as its consequence",
                failures.size() == 2 ? "" : "s", ": ", join(later, ", "),
                more > 0 ? strCat(" and ", more, " more") : "");
}

}  // namespace dsrun
