#pragma once
// The dsrt._C extension module: each bind* function registers one area of libdsrt's C++ API with
// pybind11. The Python layer (python/dsrt/) builds DeepSpeed's API on top of these; nothing here is
// meant to be called by users directly.

#include <torch/csrc/utils/pybind.h>

namespace dsrt::python {

void bindErrors(pybind11::module_& m);      ///< errors.cc: c10::Error -> dsrt.DsrtError
void bindDist(pybind11::module_& m);        ///< dist.cc: rank discovery, DistContext from torch's group
void bindEngine(pybind11::module_& m);      ///< engine.cc: dsrt::Engine
void bindEngineApi(pybind11::module_& m);   ///< engine_api.cc: no_sync, batch size setters, parameter fragments
void bindZero3(pybind11::module_& m);       ///< zero3.cc: ZeRO-3 gates for Python module hooks
void bindCheckpoint(pybind11::module_& m);  ///< checkpoint.cc: zero_to_fp32 consolidation
void bindLrSchedule(pybind11::module_& m);  ///< lr_schedule.cc: DeepSpeed's LR schedules for Python classes
void bindConfigKeys(pybind11::module_& m);  ///< config_keys.cc: the ds_config document, unparsed-key table
void bindElasticity(pybind11::module_& m);  ///< elasticity.cc: DeepSpeed's compute_elastic_config

}  // namespace dsrt::python
