"""A rank of tests/integration/agent_rendezvous.sh that asks its agent's store for a query the agents do not
serve (torch 2.x's queue_len, which waits for a reply): the agent must close the connection at once, so torch
raises instead of hanging. Exits 4 when torch raised (the expected outcome), 0 if it was answered (the test then
fails), 1 on anything else (no queue_len in this torch: the test fails too)."""
import datetime
import os
import sys

import torch.distributed as dist

store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), 1, False,
                      datetime.timedelta(seconds=30))
try:
    store.queue_len("q")
except RuntimeError as e:  # torch's DistNetworkError/DistStoreError derive from it; a missing queue_len does not
    print(f"queue_len failed: {type(e).__name__} job {os.environ.get('DSRUN_JOB_ID')}", flush=True)
    sys.exit(4)
print("queue_len answered", flush=True)
