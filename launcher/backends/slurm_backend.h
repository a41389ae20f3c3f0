#pragma once
// slurm: DeepSpeed's SlurmRunner. `srun -n N [launcher args] [--nodelist=HOSTS] [--nodes=N] [--gpus=N]
// [--ntasks-per-node=P] --kill-on-bad-exit=1 --export=ALL,K=V,... dsrun-launch --rank_env=slurm ...`.
// Differences from DeepSpeed, each for correctness: --include/--exclude become --nodelist with the hosts
// the plan selected (srun has no --include); --ntasks-per-node keeps the planned layout when every host has
// the same slots; --kill-on-bad-exit=1 stops every task at the first failure (unless the launcher args
// say otherwise); values containing ',' cannot be written into --export, so every export is also put
// into srun's own environment, which --export=ALL hands to the tasks byte for byte.

#include "launcher/command_backend.h"

namespace dsrun {

class SlurmBackend : public CommandBackend {
 public:
  using CommandBackend::CommandBackend;
  std::string_view name() const override { return "slurm"; }
  std::string unavailableHint() const override { return "load the Slurm client tools (srun, sinfo) first"; }
  Command buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;

 protected:
  std::string requiredTool() const override { return "sinfo"; }
};

}  // namespace dsrun
