#pragma once
// RankLaunch.env is a list of byte pairs (protocol version 2), not a map: this is its one writer.

#include <string>

#include "proto/agent.pb.h"

namespace dsrun::proto {

/// Appends NAME=VALUE to `rank`'s environment overlay; a later entry for the same name wins on the agent.
inline void addEnv(wire::RankLaunch& rank, const std::string& name, const std::string& value) {
  wire::EnvVar* var = rank.add_env();
  var->set_name(name);
  var->set_value(value);
}

}  // namespace dsrun::proto
