#pragma once
// Which saved module weight sets which model parameter (DeepSpeed's load_module_state_dict, i.e. torch's
// module.load_state_dict(strict=...)). Pure: names and shapes in, an index list out; no tensors, no I/O.
//   strict (load_module_strict=True, the default): the checkpoint holds exactly the model's parameter
//     count and each one, in registration order, has the model's shape (dsrt's checkpoints have always
//     matched by position; the error names the parameter).
//   not strict: matched by name; a model parameter the checkpoint lacks keeps its value, a saved name
//     the model lacks is ignored; a name present in both with another shape is still an error (as in
//     torch, where strict=False tolerates keys, not size mismatches).

#include <cstdint>
#include <string>
#include <vector>

namespace dsrt::checkpoint {

/// One side of the match: parameter names and full shapes in registration order.
struct NamedShapes {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
};

/// The result: for each model parameter, the index of the saved weight that sets it, or -1 (kept).
struct WeightMatch {
  std::vector<int64_t> source;
  std::vector<std::string> missing;      ///< model parameters the checkpoint lacks (not strict)
  std::vector<std::string> unexpected;   ///< saved weights the model lacks (not strict)
  /// True when every model parameter comes from the same position of the checkpoint and nothing is left
  /// over: the optimizer state saved with the weights belongs to these parameters.
  bool identity() const;
};

/// Throws CheckpointError prefixed with `file` on a count (strict) or shape mismatch.
WeightMatch matchModuleWeights(const NamedShapes& saved, const NamedShapes& model, bool strict,
                               const std::string& file);

/// "a, b, c" (at most `limit` names, then "... (N more)"; "none" when empty), for error texts.
std::string joinNames(const std::vector<std::string>& names, size_t limit = 5);

}  // namespace dsrt::checkpoint
