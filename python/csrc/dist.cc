// One process group for the script and the engine: the Python layer creates torch.distributed's default
// group (or finds the one the script made) and hands it here, so engine collectives and the script's own
// torch.distributed calls run on the same c10d::ProcessGroup object.
#include "python/csrc/bindings.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/comms/comms_log.h"
#include "runtime/dist_env.h"
#include "runtime/rank_env.h"

namespace py = pybind11;

namespace dsrt::python {
namespace {

py::dict rankEnvDict(const RankEnv& env) {
  py::dict d;
  d["rank"] = env.rank;
  d["world_size"] = env.worldSize;
  d["local_rank"] = env.localRank;
  d["master_addr"] = env.masterAddr;
  d["master_port"] = env.masterPort;
  d["source"] = env.source;
  return d;
}

}  // namespace

void bindDist(py::module_& m) {
  // std::invalid_argument (missing or inconsistent variables) becomes ValueError (errors.cc).
  m.def(
      "resolve_rank_env", [] { return rankEnvDict(resolveRankEnv(processEnv())); },
      "RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT from dsrun/torchrun, else OpenMPI, MPICH or Slurm");

  py::class_<DistContext, std::shared_ptr<DistContext>>(m, "DistContext")
      .def_property_readonly("rank", [](const DistContext& d) { return d.env.rank; })
      .def_property_readonly("world_size", [](const DistContext& d) { return d.env.worldSize; })
      .def_property_readonly("local_rank", [](const DistContext& d) { return d.env.localRank; })
      .def_property_readonly("backend", [](const DistContext& d) { return d.backend; });

  py::class_<comms::CommsLog, std::shared_ptr<comms::CommsLog>>(
      m, "CommsLog", "where the engine records its own collectives for deepspeed.comm's comms logger")
      .def(py::init<>())
      .def("configure", &comms::CommsLog::configure, py::arg("enabled"), py::arg("prof_all"), py::arg("prof_ops"))
      .def(
          "take",
          [](comms::CommsLog& log) {
            std::vector<std::tuple<std::string, int64_t, double>> out;
            for (auto& r : log.take()) {
              out.emplace_back(std::move(r.op), r.bytes, r.latencyMs);
            }
            return out;
          },
          "the records since the last take(): [(op, message bytes, latency ms)], in completion order");

  m.def(
      "dist_context",
      [](const py::object& group, int localRank, const std::string& source,
         std::shared_ptr<comms::CommsLog> commsLog) {
        auto pg = py::cast<c10::intrusive_ptr<c10d::ProcessGroup>>(group);
        auto dist = std::make_shared<DistContext>();
        dist->env.rank = pg->getRank();
        dist->env.worldSize = pg->getSize();
        dist->env.localRank = localRank;
        dist->env.source = source;
        dist->pg = pg;
        dist->backend = pg->getBackendName();
        dist->commsLog = std::move(commsLog);
        return dist;
      },
      py::arg("group"), py::arg("local_rank"), py::arg("source") = "env", py::arg("comms_log") = nullptr,
      "wraps a torch.distributed ProcessGroup (the same C++ object) for the engine");
}

}  // namespace dsrt::python
