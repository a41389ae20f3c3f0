#pragma once
// StoreResult: what one store operation answers (agent/store_hub.h), the fields its op uses.

#include <cstdint>
#include <string>
#include <vector>

namespace dsrun::agent {

/// `error` set: it failed (the link above was lost, a refused request, ...).
struct StoreResult {
  std::vector<std::string> values;
  int64_t number = 0;
  bool ready = false;
  std::string error;
};

}  // namespace dsrun::agent
