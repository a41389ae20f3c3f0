// DeepSpeed's compute_elastic_config for the Python package (dsrt.elasticity): the elastic/ library that
// ds_elastic, the launcher's elastic controller and libdsrt's config use, so every caller gets one answer.
#include "python/csrc/bindings.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "elastic/compute_elastic_config.h"
#include "elastic/elastic_batch_params.h"
#include "elastic/elastic_config.h"
#include "elastic/elastic_error.h"

namespace py = pybind11;

namespace dsrt::python {

void bindElasticity(py::module_& m) {
  m.def(
      "compute_elastic_config",
      [](const std::string& configJson, long long worldSize, const std::optional<std::string>& worldSizeEnv) {
        py::dict out;
        try {
          const auto r = dsrun::elastic::computeElasticConfig(nlohmann::json::parse(configJson), worldSize,
                                                              worldSizeEnv, "ds_config");
          out["final_batch_size"] = r.finalBatchSize;
          out["valid_gpus"] = r.validGpus ? py::cast(*r.validGpus) : py::none();
          out["micro_batch_size"] = r.microBatchSize ? py::cast(*r.microBatchSize) : py::none();
          out["candidate_micro_batch_size"] =
              r.candidateMicroBatchSize ? py::cast(*r.candidateMicroBatchSize) : py::none();
        } catch (const dsrun::elastic::ElasticError& e) {
          // The Python layer raises DeepSpeed's exception class for this kind (dsrt/elasticity/config.py).
          out["error_kind"] = dsrun::elastic::kindName(e.kind());
          out["message"] = e.what();
        }
        return out;
      },
      py::arg("config_json"), py::arg("world_size"), py::arg("world_size_env"),
      "DeepSpeed's compute_elastic_config on a JSON ds_config: a dict of its results, or of error_kind and message");
  m.def(
      "elastic_batch_params",
      [](const std::string& configJson, long long worldSize, const std::optional<std::string>& schedulerConfig,
         const std::string& source) {
        py::dict out;
        try {
          const auto p = dsrun::elastic::elasticBatchParams(nlohmann::json::parse(configJson), worldSize,
                                                            schedulerConfig, source);
          out["train_batch_size"] = p.trainBatchSize;
          out["train_micro_batch_size_per_gpu"] = p.microBatchPerGpu;
          out["gradient_accumulation_steps"] = p.gradientAccumulationSteps;
        } catch (const dsrun::elastic::ElasticError& e) {
          out["error_kind"] = dsrun::elastic::kindName(e.kind());
          out["message"] = e.what();
        }
        return out;
      },
      py::arg("config_json"), py::arg("world_size"), py::arg("scheduler_config"), py::arg("source"),
      "the engine's elasticity checks (the batch for world_size, DEEPSPEED_ELASTICITY_CONFIG, non-elastic batch "
      "keys): a dict of the batch, or of error_kind and message");
  m.def(
      "elastic_config_fields",
      [](const std::string& blockJson, const std::string& source) {
        py::dict out;
        try {
          const auto c = dsrun::elastic::parseElasticConfig(nlohmann::json::parse(blockJson), source);
          out["max_acceptable_batch_size"] = c.maxTrainBatchSize;
          out["micro_batches"] = c.microBatchSizes;
          out["version_json"] = c.version.dump();  // as written: DeepSpeed compares the raw values
        } catch (const dsrun::elastic::ElasticError& e) {
          out["error_kind"] = dsrun::elastic::kindName(e.kind());
          out["message"] = e.what();
        }
        return out;
      },
      py::arg("block_json"), py::arg("source"),
      "an elasticity block validated as DeepSpeed's ElasticityConfig: the fields ensure_immutable_elastic_config "
      "compares, or error_kind and message");
}

}  // namespace dsrt::python
