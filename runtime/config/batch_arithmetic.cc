#include "runtime/config/batch_arithmetic.h"

#include <sstream>

namespace dsrt::config {
namespace {

// DeepSpeed computes with Python's //, which floors; C++ '/' truncates toward zero. The two differ only for
// negative operands, which then fail the > 0 assertion with the same derived value DeepSpeed reports.
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) {
    --q;
  }
  return q;
}

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw ConfigError(source + ": " + what);
}

void requirePositive(const std::string& source, const char* key, int64_t value, const std::string& derivation) {
  if (value > 0) {
    return;
  }
  std::ostringstream out;
  out << key << ": must be greater than 0, got '" << value << "'";
  if (!derivation.empty()) {
    out << " (derived as " << derivation << ")";
  }
  fail(source, out.str());
}

// A divisor of zero is a ZeroDivisionError in DeepSpeed; here it is the > 0 error of the key it came from.
void requireNonZeroDivisor(const std::string& source, const char* key, int64_t value) {
  if (value == 0) {
    requirePositive(source, key, value, "");
  }
}

}  // namespace

BatchConfig resolveBatchConfig(std::optional<int64_t> train,
                               std::optional<int64_t> micro,
                               std::optional<int64_t> gas,
                               int worldSize,
                               const std::string& source) {
  if (worldSize < 1) {
    fail(source, "world size must be at least 1, got '" + std::to_string(worldSize) + "'");
  }
  const int64_t ws = worldSize;
  std::string trainFrom, microFrom, gasFrom;  // how a derived value was computed, for the error text
  auto str = [](int64_t v) { return std::to_string(v); };

  if (train && micro && gas) {
    // all three given: nothing to derive
  } else if (train && micro) {
    requireNonZeroDivisor(source, "train_micro_batch_size_per_gpu", *micro);
    gas = floorDiv(floorDiv(*train, *micro), ws);
    gasFrom = "train_batch_size // train_micro_batch_size_per_gpu // world_size = " + str(*train) + " // " +
              str(*micro) + " // " + str(ws);
  } else if (train && gas) {
    requireNonZeroDivisor(source, "gradient_accumulation_steps", *gas);
    micro = floorDiv(floorDiv(*train, ws), *gas);
    microFrom = "train_batch_size // world_size // gradient_accumulation_steps = " + str(*train) + " // " +
                str(ws) + " // " + str(*gas);
  } else if (micro && gas) {
    train = *micro * *gas * ws;
    trainFrom = "train_micro_batch_size_per_gpu * gradient_accumulation_steps * world_size = " + str(*micro) +
                " * " + str(*gas) + " * " + str(ws);
  } else if (train) {
    gas = 1;
    micro = floorDiv(*train, ws);
    microFrom = "train_batch_size // world_size = " + str(*train) + " // " + str(ws);
  } else if (micro) {
    train = *micro * ws;
    gas = 1;
    trainFrom = "train_micro_batch_size_per_gpu * world_size = " + str(*micro) + " * " + str(ws);
  } else {
    fail(source, std::string("either train_batch_size or train_micro_batch_size_per_gpu needs to be provided") +
                     (gas ? ", got only gradient_accumulation_steps" : ", got neither"));
  }

  requirePositive(source, "train_batch_size", *train, trainFrom);
  requirePositive(source, "train_micro_batch_size_per_gpu", *micro, microFrom);
  requirePositive(source, "gradient_accumulation_steps", *gas, gasFrom);
  if (*train != *micro * *gas * ws) {
    fail(source, "train_batch_size is not equal to train_micro_batch_size_per_gpu * gradient_accumulation_steps"
                 " * world_size, got " + str(*train) + " != " + str(*micro) + " * " + str(*gas) + " * " + str(ws));
  }
  return BatchConfig{*train, *micro, *gas};
}

}  // namespace dsrt::config
