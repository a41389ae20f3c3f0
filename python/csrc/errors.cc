// Every error libdsrt raises reaches Python as one dsrt.DsrtError (a RuntimeError) carrying the C++
// message without LibTorch's C++ backtrace: users act on the message, the frames are noise to them. Some
// exceptions keep DeepSpeed's Python types: std::invalid_argument (ValueError), AssertionFailure
// (DsrtAssertionError: a DsrtError and an AssertionError), and elasticity errors (DeepSpeed's classes from
// deepspeed.elasticity.config, also DsrtErrors).
#include "python/csrc/bindings.h"

#include <c10/util/Exception.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "elastic/elastic_error.h"
#include "runtime/assertion_failure.h"
#include "runtime/config/config_error.h"

namespace py = pybind11;

namespace dsrt::python {
namespace {

// DeepSpeed's exception class for an elasticity failure of `kind` (elastic/elastic_error.h kindName), defined in
// dsrt/elasticity/config.py; "other" is where DeepSpeed raises a plain ValueError.
void setElasticityError(const std::string& kind, const char* what) {
  if (kind == "other") {
    PyErr_SetString(PyExc_ValueError, what);
    return;
  }
  const char* name = kind == "config"                    ? "ElasticityConfigError"
                     : kind == "incompatible_world_size" ? "ElasticityIncompatibleWorldSize"
                                                         : "ElasticityError";
  try {
    py::object type = py::module_::import("dsrt.elasticity.config").attr(name);
    PyErr_SetString(type.ptr(), what);
  } catch (py::error_already_set& importFailed) {
    importFailed.restore();  // a broken installation: its own ImportError says more than the config's
  }
}

}  // namespace

void bindErrors(py::module_& m) {
  // PyErr_SetString rather than error(msg): the call operator is deprecated in the pybind11 3 that newer
  // torches bundle, and PyErr_SetString means the same in every pybind11.
  // Deliberately never destroyed: a static py::object's destructor would run after the interpreter is
  // finalised and decrement a freed object (heap corruption at exit with torch 2.x's pybind11 3).
  static auto* error = new py::exception<std::runtime_error>(m, "DsrtError", PyExc_RuntimeError);
  // Where DeepSpeed fails an assert (its tests and scripts catch AssertionError), dsrt raises an error that is
  // both: a DsrtError for dsrt's callers, an AssertionError for DeepSpeed's. Never destroyed, as above.
  static PyObject* assertion = PyErr_NewExceptionWithDoc(
      "dsrt._C.DsrtAssertionError", "a DsrtError where DeepSpeed raises AssertionError",
      py::make_tuple(py::handle(error->ptr()), py::handle(PyExc_AssertionError)).ptr(), nullptr);
  if (assertion == nullptr) throw py::error_already_set();
  m.attr("DsrtAssertionError") = py::handle(assertion);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) {
        std::rethrow_exception(p);
      }
    } catch (const c10::Error& e) {
      PyErr_SetString(error->ptr(), e.what_without_backtrace());
    } catch (const AssertionFailure& e) {  // where DeepSpeed fails an assert
      PyErr_SetString(assertion, e.what());
    } catch (const dsrun::elastic::ElasticError& e) {  // deepspeed.elasticity's functions (elasticity.cc)
      setElasticityError(dsrun::elastic::kindName(e.kind()), e.what());
    } catch (const config::ElasticityConfigError& e) {  // an elastic ds_config at initialize
      setElasticityError(e.kind(), e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::runtime_error& e) {  // checkpoint::CheckpointError and the like
      PyErr_SetString(error->ptr(), e.what());
    }
  });
}

}  // namespace dsrt::python
