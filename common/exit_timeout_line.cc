#include "common/exit_timeout_line.h"

#include "common/strings.h"

namespace dsrun {

std::string exitTimeoutLine(const std::string& firstClean, double timeoutS, const std::vector<std::string>& stillRunning) {
  const std::string who = stillRunning.empty() ? std::string("ranks") : join(stillRunning, ", ");
  return strCat("dsrun: exit timeout: ", who, " still running ", timeoutS, "s after ", firstClean,
                " finished cleanly; stopped ", stillRunning.size() == 1 ? "it" : "them", ", the job fails");
}

}  // namespace dsrun
