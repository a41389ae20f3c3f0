#include "python/csrc/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "libdsrt's C++ engine for the dsrt Python package (use the dsrt package, not this module)";
  dsrt::python::bindErrors(m);
  dsrt::python::bindDist(m);
  dsrt::python::bindEngine(m);
  dsrt::python::bindEngineApi(m);
  dsrt::python::bindZero3(m);
  dsrt::python::bindCheckpoint(m);
  dsrt::python::bindLrSchedule(m);
  dsrt::python::bindConfigKeys(m);
  dsrt::python::bindElasticity(m);
}
