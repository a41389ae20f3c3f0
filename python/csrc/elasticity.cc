// DeepSpeed's compute_elastic_config for the Python package (dsrt.elasticity): the elastic/ library that
// ds_elastic, the launcher's elastic controller and libdsrt's config use, so every caller gets one answer.
// Its ElasticError reaches Python as DeepSpeed's exception class for its kind (errors.cc).
#include "python/csrc/bindings.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "elastic/compute_elastic_config.h"
#include "elastic/elastic_config.h"

namespace py = pybind11;

namespace dsrt::python {

void bindElasticity(py::module_& m) {
  m.def(
      "compute_elastic_config",
      [](const std::string& configJson, long long worldSize, const std::optional<std::string>& worldSizeEnv) {
        const auto r = dsrun::elastic::computeElasticConfig(nlohmann::json::parse(configJson), worldSize,
                                                            worldSizeEnv, "ds_config");
        py::dict out;
        out["final_batch_size"] = r.finalBatchSize;
        out["valid_gpus"] = r.validGpus ? py::cast(*r.validGpus) : py::none();
        out["micro_batch_size"] = r.microBatchSize ? py::cast(*r.microBatchSize) : py::none();
        out["candidate_micro_batch_size"] =
            r.candidateMicroBatchSize ? py::cast(*r.candidateMicroBatchSize) : py::none();
        return out;
      },
      py::arg("config_json"), py::arg("world_size"), py::arg("world_size_env"),
      "DeepSpeed's compute_elastic_config on a JSON ds_config, as a dict of its results");
  m.def(
      "elastic_config_fields",
      [](const std::string& blockJson, const std::string& source) {
        const auto c = dsrun::elastic::parseElasticConfig(nlohmann::json::parse(blockJson), source);
        py::dict out;
        out["max_acceptable_batch_size"] = c.maxTrainBatchSize;
        out["micro_batches"] = c.microBatchSizes;
        out["version_json"] = c.version.dump();  // as written: DeepSpeed compares the raw values
        return out;
      },
      py::arg("block_json"), py::arg("source"),
      "an elasticity block validated as DeepSpeed's ElasticityConfig: the fields ensure_immutable_elastic_config "
      "compares");
}

}  // namespace dsrt::python
