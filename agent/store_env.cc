#include "agent/store_env.h"

#include <string>

namespace dsrun::agent {

void pointRanksAtStore(JobSpec& spec, uint16_t port) {
  for (auto& rank : spec.ranks) {
    auto& env = rank.command.env;
    env["MASTER_ADDR"] = "127.0.0.1";
    env["MASTER_PORT"] = std::to_string(port);
    env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
    env.emplace("TORCHELASTIC_RESTART_COUNT", "0");  // an elastic round's own count wins
  }
}

}  // namespace dsrun::agent
