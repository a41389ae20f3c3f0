#pragma once
// Loads a golden table from tests/runtime/config/golden (generated from DeepSpeed by gen_golden.py).

#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace dsrt::config::testing {

inline nlohmann::json loadGolden(const std::string& name) {
  std::string path = std::string(DSRT_CONFIG_GOLDEN_DIR) + "/" + name;
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("golden table missing: " + path);
  }
  return nlohmann::json::parse(in);
}

}  // namespace dsrt::config::testing
