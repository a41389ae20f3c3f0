// matchModuleWeights from tables: strict matches by position and names the parameter on a mismatch;
// not strict matches by name, keeps the model's missing parameters, ignores the checkpoint's extra ones,
// and still refuses a shape mismatch (as torch's load_state_dict(strict=False)).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/module_weights.h"

using namespace dsrt::checkpoint;
using Catch::Contains;

namespace {

NamedShapes side(std::vector<std::string> names, std::vector<std::vector<int64_t>> shapes) {
  return NamedShapes{std::move(names), std::move(shapes)};
}

const NamedShapes kSaved = side({"a.weight", "a.bias", "b.weight"}, {{4, 2}, {4}, {3, 4}});

}  // namespace

TEST_CASE("strict matching is positional and an identity", "[checkpoint]") {
  const WeightMatch m = matchModuleWeights(kSaved, kSaved, true, "f");
  CHECK(m.source == std::vector<int64_t>{0, 1, 2});
  CHECK(m.missing.empty());
  CHECK(m.unexpected.empty());
  CHECK(m.identity());
}

TEST_CASE("strict matching refuses another count or shape, naming the file and the parameter", "[checkpoint]") {
  const NamedShapes bigger = side({"a.weight", "a.bias", "b.weight", "c.weight"}, {{4, 2}, {4}, {3, 4}, {3, 3}});
  REQUIRE_THROWS_WITH(matchModuleWeights(kSaved, bigger, true, "ckpt/m.pt"),
                      Contains("ckpt/m.pt: the model has 4 parameters, got '3'") &&
                          Contains("hint: load_checkpoint(load_module_strict=False)"));
  const NamedShapes reshaped = side({"a.weight", "a.bias", "b.weight"}, {{4, 2}, {4}, {3, 5}});
  REQUIRE_THROWS_WITH(matchModuleWeights(kSaved, reshaped, true, "ckpt/m.pt"),
                      "ckpt/m.pt: parameter 'b.weight' has shape [3, 5] in the model, got '[3, 4]'");
}

TEST_CASE("not strict matches by name whatever the order", "[checkpoint]") {
  const NamedShapes model = side({"b.weight", "a.weight", "a.bias"}, {{3, 4}, {4, 2}, {4}});
  const WeightMatch m = matchModuleWeights(kSaved, model, false, "f");
  CHECK(m.source == std::vector<int64_t>{2, 0, 1});
  CHECK(m.missing.empty());
  CHECK(m.unexpected.empty());
  CHECK_FALSE(m.identity());  // the optimizer state is laid out in the checkpoint's order
  CHECK(matchModuleWeights(kSaved, kSaved, false, "f").identity());
}

TEST_CASE("not strict keeps missing parameters and ignores unexpected ones", "[checkpoint]") {
  const NamedShapes model = side({"a.weight", "new.weight", "a.bias"}, {{4, 2}, {7}, {4}});
  const WeightMatch m = matchModuleWeights(kSaved, model, false, "f");
  CHECK(m.source == std::vector<int64_t>{0, -1, 1});
  CHECK(m.missing == std::vector<std::string>{"new.weight"});
  CHECK(m.unexpected == std::vector<std::string>{"b.weight"});
  CHECK_FALSE(m.identity());
}

TEST_CASE("not strict still refuses a shape mismatch of a shared name", "[checkpoint]") {
  const NamedShapes model = side({"a.weight", "a.bias"}, {{4, 3}, {4}});
  REQUIRE_THROWS_AS(matchModuleWeights(kSaved, model, false, "f"), CheckpointError);
  REQUIRE_THROWS_WITH(matchModuleWeights(kSaved, model, false, "f"),
                      "f: parameter 'a.weight' has shape [4, 3] in the model, got '[4, 2]'");
}

TEST_CASE("joinNames lists a few names and counts the rest", "[checkpoint]") {
  CHECK(joinNames({}) == "none");
  CHECK(joinNames({"a", "b"}) == "a, b");
  CHECK(joinNames({"a", "b", "c", "d"}, 2) == "a, b ... (2 more)");
}
