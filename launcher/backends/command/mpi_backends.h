#pragma once
// The MPI backends, DeepSpeed's OpenMPIRunner, MPICHRunner, IMPIRunner and MVAPICHRunner: mpirun starts
// every rank as `dsrun-launch --rank_env=FLAVOR ... SCRIPT ARGS`, which maps the MPI launcher's rank
// variables to dsrun's environment contract. Exports travel as -x K=V / -genv K V / -env K=V with the
// value unquoted (DeepSpeed wraps values in literal double quotes, which then reach the ranks).

#include "launcher/backends/command/command_backend.h"

namespace dsrun::launcher {

/// `mpirun -n N -hostfile HOSTFILE --mca btl ^openib [--mca btl_tcp_if_include eth0] [launcher args]
/// -x K=V ... dsrun-launch --rank_env=openmpi ...`; eth0 is the default unless launcher args name
/// btl_tcp_if_include. Also exports UCX_TLS=tcp, as DeepSpeed does.
class OpenMpiBackend : public CommandBackend {
 public:
  using CommandBackend::CommandBackend;
  std::string_view name() const override { return "openmpi"; }
  std::string unavailableHint() const override { return "install OpenMPI (apt-get install openmpi-bin)"; }
  Command buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;

 protected:
  std::string requiredTool() const override { return "ompi_info"; }
};

/// `mpirun -n N -ppn P [launcher args] -genv K V ... -genv MASTER_ADDR A -genv MASTER_PORT P
/// -genv WORLD_SIZE N -genv LOCAL_SIZE P -hosts H1,H2 dsrun-launch --rank_env=mpich ...`. The program is
/// mpirun.mpich when it exists (Debian installs MPICH's mpirun under that name), else mpirun.
class MpichBackend : public CommandBackend {
 public:
  using CommandBackend::CommandBackend;
  std::string_view name() const override { return "mpich"; }
  std::string unavailableHint() const override { return "install MPICH (apt-get install mpich)"; }
  Command buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;

 protected:
  std::string requiredTool() const override { return site_.inPath("mpirun.mpich") ? "mpirun.mpich" : "mpirun"; }
};

/// Intel MPI: `mpirun -ppn P [launcher args] -genv K V ... [-genv OMP_NUM_THREADS C] -genv MASTER_ADDR A
/// -genv MASTER_PORT P -genv WORLD_SIZE N -genv LOCAL_SIZE P -genv I_MPI_PIN 0 -hosts H1,H2
/// -n 1 -env RANK 0 -env LOCAL_RANK 0 dsrun-launch ... : -n 1 -env RANK 1 ...`, one segment per rank.
class ImpiBackend : public CommandBackend {
 public:
  using CommandBackend::CommandBackend;
  std::string_view name() const override { return "impi"; }
  std::string unavailableHint() const override { return "load Intel MPI (source mpivars.sh) so mpirun is in PATH"; }
  Command buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;

 protected:
  std::string requiredTool() const override { return "mpirun"; }
};

/// MVAPICH2-GDR: `mpirun -np N -ppn P --hostfile FILE [launcher args] -env K=V ... dsrun-launch ...`
/// with DeepSpeed's MV2_* exports. FILE (one host per line) is written before the launch and removed
/// after it; it is per job (/tmp/dsrun-mvapich-hostfile-<job id>), unlike DeepSpeed's shared path.
class MvapichBackend : public CommandBackend {
 public:
  using CommandBackend::CommandBackend;
  std::string_view name() const override { return "mvapich"; }
  std::string unavailableHint() const override { return "install MVAPICH2-GDR so that mpiname is in PATH"; }
  Command buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;

  /// The per-job hostfile path.
  static std::string hostfilePath(const WorldPlan& plan);

 protected:
  std::string requiredTool() const override { return "mpiname"; }
  void beforeLaunch(const WorldPlan& plan, const LaunchContext& ctx) override;
  void afterLaunch(const WorldPlan& plan, const LaunchContext& ctx) override;
};

}  // namespace dsrun::launcher
