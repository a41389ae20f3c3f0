// The ds_config as the Python layer needs it: the document itself (JSON with comments, or YAML, read by
// the same code the engine uses) for the blocks the package implements, and the table of top-level keys
// libdsrt does not parse (runtime/config/top_level_keys.h), for generated docs.
#include "python/csrc/bindings.h"

#include <c10/util/Exception.h>

#include <string>
#include <tuple>
#include <vector>

#include "runtime/config/config_error.h"
#include "runtime/config/deepspeed_config.h"
#include "runtime/config/top_level_keys.h"

namespace py = pybind11;

namespace dsrt::python {

void bindConfigKeys(py::module_& m) {
  m.def(
      "read_config_document",
      [](const std::string& path) {
        try {
          return config::readConfigDocument(path).dump();
        } catch (const config::ConfigError& e) {
          TORCH_CHECK(false, e.what());
        }
      },
      py::arg("path"), "The ds_config file at PATH as JSON text (comments removed, YAML converted).");
  m.def(
      "unparsed_config_keys",
      [] {
        std::vector<std::tuple<std::string, std::string, std::string>> rows;
        for (const config::TopLevelKey& k : config::unparsedTopLevelKeys()) {
          rows.emplace_back(k.key, config::toString(k.support), k.note);
        }
        return rows;
      },
      "(key, 'python package' | 'not supported', note) for each top-level ds_config key libdsrt's parser "
      "leaves to the Python package or ignores.");
}

}  // namespace dsrt::python
