#include "python/csrc/client_optimizer.h"

#include <c10/util/Exception.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/optim/client_flat_optimizer.h"

namespace py = pybind11;

namespace dsrt::python {
namespace {

// The Python object, shared by the callbacks without touching its reference count: copies of a
// std::function happen without the GIL, so a py::object must not be copied there. The last owner
// releases it under the GIL.
using SharedObject = std::shared_ptr<py::object>;

SharedObject share(const py::object& obj) {
  return SharedObject(new py::object(obj), [](py::object* o) {
    if (!Py_IsInitialized()) {
      return;  // an engine outliving the interpreter: nothing left to release the reference to
    }
    py::gil_scoped_acquire gil;
    delete o;
  });
}

// Calls fn under the GIL; a Python exception becomes a c10::Error that names the method, so it crosses
// the engine's C++ frames as every other engine error does (and reaches the script as dsrt.DsrtError).
template <typename Fn>
auto underGil(const char* method, Fn&& fn) -> decltype(fn()) {
  py::gil_scoped_acquire gil;
  try {
    return fn();
  } catch (py::error_already_set& e) {
    const std::string what = e.what();
    TORCH_CHECK(false, "client optimizer ", method, ": ", what);
  }
}

optim::ClientOptimizerCallbacks callbacksOf(const SharedObject& stepper) {
  optim::ClientOptimizerCallbacks cb;
  cb.bind = [stepper](const at::Tensor& flat, const std::vector<optim::GroupRun>& runs) {
    underGil("bind", [&] {
      py::list pairs;
      for (const optim::GroupRun& run : runs) {
        pairs.append(py::make_tuple(run.end, run.group));
      }
      stepper->attr("bind")(flat, pairs);
    });
  };
  cb.step = [stepper](const at::Tensor& params, const at::Tensor& grads, double lr) {
    underGil("step", [&] { stepper->attr("step")(params, grads, lr); });
  };
  cb.state = [stepper] {
    return underGil("state", [&] {
      optim::OptimizerState out;
      for (const py::handle item : stepper->attr("state")()) {
        auto pair = item.cast<std::pair<std::string, at::Tensor>>();
        out.emplace_back(std::move(pair.first), std::move(pair.second));
      }
      return out;
    });
  };
  cb.stepCount = [stepper] { return underGil("step_count", [&] { return stepper->attr("step_count")().cast<int64_t>(); }); };
  cb.loadState = [stepper](const optim::OptimizerState& state, int64_t stepCount) {
    underGil("load_state", [&] {
      py::list entries;
      for (const auto& [name, t] : state) {
        entries.append(py::make_tuple(name, t));
      }
      stepper->attr("load_state")(entries, stepCount);
    });
  };
  return cb;
}

}  // namespace

OptimizerFactory clientOptimizerFactory(const py::object& stepper) {
  if (stepper.is_none()) {
    return {};
  }
  SharedObject shared = share(stepper);
  return [shared](at::Tensor flatParams) -> std::unique_ptr<optim::FlatOptimizer> {
    return std::make_unique<optim::ClientFlatOptimizer>(std::move(flatParams), callbacksOf(shared));
  };
}

}  // namespace dsrt::python
