#include "supervision/process_state.h"

#include <fstream>

#include "common/strings.h"

namespace dsrun {

std::string processState(pid_t pid) {
  std::ifstream in(strCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("State:", 0) == 0) return trim(line.substr(6));
  }
  return "";
}

}  // namespace dsrun
