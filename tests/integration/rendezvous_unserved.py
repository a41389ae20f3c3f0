"""A rank of tests/integration/agent_rendezvous.sh that asks its agent's store for a query the agents do not
serve (torch 2.x's queue_push): the agent must close its connection at once, so torch raises instead of hanging.
Exits 4 when torch raised (the expected outcome), 0 if the push was answered (the test then fails)."""
import datetime
import os
import sys

import torch.distributed as dist

store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), 1, False,
                      datetime.timedelta(seconds=30))
try:
    store.queue_push("q", b"x")
except Exception as e:  # noqa: BLE001  (torch's DistNetworkError or RuntimeError, by release)
    print(f"queue_push failed: {type(e).__name__}", flush=True)
    sys.exit(4)
print("queue_push answered", flush=True)
