// DeepSpeed's LR schedules (runtime/config/lr_schedule.h) for the Python scheduler classes of
// dsrt.runtime.lr_schedules: a script that builds WarmupLR(optimizer, ...) itself gets the same numbers as
// the config's "scheduler" block, from the same C++ formulas and the same argument checks.
#include "python/csrc/bindings.h"

#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config/deepspeed_config.h"
#include "runtime/config/json_reader.h"
#include "runtime/config/lr_schedule.h"
#include "runtime/config/section_parsers.h"

namespace py = pybind11;

namespace dsrt::python {
namespace {

/// One group's schedule: the scheduler block ({"type", "params"}) read as the config reads it, with
/// `optimizerLr` as the optimizer's lr (WarmupCosineLR scales it).
config::SchedulerConfig parseSchedule(const std::string& blockJson, double optimizerLr) {
  const nlohmann::json block = nlohmann::json::parse(blockJson);
  std::vector<std::string> warnings;
  config::JsonReader reader(block, "scheduler", "<lr_schedules>", warnings);
  config::OptimizerConfig optimizer;
  optimizer.lr = optimizerLr;
  return config::parseSchedulerConfig(reader, optimizer);
}

}  // namespace

void bindLrSchedule(py::module_& m) {
  py::class_<config::SchedulerConfig>(m, "LrSchedule")
      .def(py::init(&parseSchedule), py::arg("block_json"), py::arg("optimizer_lr"))
      .def(
          "lr", [](const config::SchedulerConfig& s, int64_t last) { return config::learningRate(s, last); },
          py::arg("last_batch_iteration"))
      .def(
          "betas",
          [](const config::SchedulerConfig& s, int64_t last, bool hasBetas) -> std::optional<std::array<double, 2>> {
            return config::oneCycleBetas(s, last, hasBetas);
          },
          py::arg("last_batch_iteration"), py::arg("optimizer_has_betas"));
}

}  // namespace dsrt::python
