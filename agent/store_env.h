#pragma once
// pointRanksAtStore: what --rendezvous agent changes in a rank's environment (docs/rendezvous.md "The flag and
// what the ranks see"): MASTER_ADDR:MASTER_PORT become this node's store endpoint and TORCHELASTIC_USE_AGENT_STORE
// tells torch's env:// handler that an agent hosts the store there, so every rank, rank 0 included, is a client
// (torch 2.x also checks that the address and port are MASTER_ADDR's and MASTER_PORT's; torch 1.13 reads
// TORCHELASTIC_RESTART_COUNT for its key prefix and fails without it).

#include <cstdint>

#include "agent/job_spec.h"

namespace dsrun::agent {

void pointRanksAtStore(JobSpec& spec, uint16_t port);

}  // namespace dsrun::agent
