#include "runtime/checkpoint/module_weights.h"

#include <sstream>
#include <unordered_map>

#include "runtime/checkpoint/checkpoint_error.h"

namespace dsrt::checkpoint {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

void checkShape(const NamedShapes& saved, size_t s, const NamedShapes& model, size_t m, const std::string& file) {
  if (saved.shapes[s] == model.shapes[m]) return;
  throw CheckpointError(file + ": parameter '" + saved.names[s] + "' has shape " + shapeText(model.shapes[m]) +
                        " in the model, got '" + shapeText(saved.shapes[s]) + "'");
}

}  // namespace

bool WeightMatch::identity() const {
  if (!unexpected.empty()) return false;
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

WeightMatch matchModuleWeights(const NamedShapes& saved, const NamedShapes& model, bool strict,
                               const std::string& file) {
  WeightMatch out;
  if (strict) {
    if (saved.shapes.size() != model.shapes.size()) {
      throw CheckpointError(file + ": the model has " + std::to_string(model.shapes.size()) + " parameters, got '" +
                            std::to_string(saved.shapes.size()) +
                            "'\n  hint: load_checkpoint(load_module_strict=False) loads the parameters whose names "
                            "match and keeps the others");
    }
    for (size_t i = 0; i < saved.shapes.size(); ++i) {
      checkShape(saved, i, model, i, file);
      out.source.push_back(static_cast<int64_t>(i));
    }
    return out;
  }
  std::unordered_map<std::string, size_t> byName;
  for (size_t i = 0; i < saved.names.size(); ++i) byName.emplace(saved.names[i], i);
  std::vector<bool> used(saved.names.size(), false);
  for (size_t m = 0; m < model.names.size(); ++m) {
    auto it = byName.find(model.names[m]);
    if (it == byName.end()) {
      out.source.push_back(-1);
      out.missing.push_back(model.names[m]);
      continue;
    }
    checkShape(saved, it->second, model, m, file);
    out.source.push_back(static_cast<int64_t>(it->second));
    used[it->second] = true;
  }
  for (size_t i = 0; i < saved.names.size(); ++i) {
    if (!used[i]) out.unexpected.push_back(saved.names[i]);
  }
  return out;
}

std::string joinNames(const std::vector<std::string>& names, size_t limit) {
  if (names.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += " ... (" + std::to_string(names.size() - limit) + " more)";
  return out;
}

}  // namespace dsrt::checkpoint
