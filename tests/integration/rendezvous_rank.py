"""A rank of tests/integration/agent_rendezvous.sh: torch's own env:// rendezvous, one Gloo all_reduce whose
result it checks, and a clean destroy. Prints where its store was (MASTER_ADDR:MASTER_PORT as its agent set them)
and exits 3 if the sum is wrong, so the test fails on a wrong answer as well as on a hang or an error."""
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
expected = world * (world + 1) / 2
print(f"rank {rank}/{world} torch {torch.__version__.split('+')[0]} sum {t.item():g} expected {expected:g} "
      f"store {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} "
      f"agent_store={os.environ.get('TORCHELASTIC_USE_AGENT_STORE')} job {os.environ.get('DSRUN_JOB_ID')}", flush=True)
dist.destroy_process_group()
sys.exit(0 if t.item() == expected else 3)
