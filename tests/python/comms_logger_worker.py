"""One rank of test_comms_logger's two-rank run: trains a small MLP for STEPS steps at each ZeRO stage given
on the command line with the comms_logger block on, and prints (rank 0) one JSON line per stage with
deepspeed.comm.log_summary()'s numbers: {"stage": s, "params": n, "summary": {op: {bytes: count}}}."""

import json
import sys

import torch

import dsrt
from dsrt import comm

STEPS = 2


def run(stage):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    config = {"train_batch_size": 4, "gradient_clipping": 1.0,
              "optimizer": {"type": "Adam", "params": {"lr": 0.01}},
              # ZeRO-3: no persistent parameters, so every use of a layer is a gather.
              "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0},
              "comms_logger": {"enabled": True}}
    params = sum(p.numel() for p in model.parameters())  # before ZeRO-3 partitions them
    comm.reset_log()
    engine, *_ = dsrt.initialize(model=model, model_parameters=model.parameters(), config=config)
    for _ in range(STEPS):
        loss = engine(torch.randn(2, 8)).pow(2).mean()
        engine.backward(loss)
        engine.step()
    summary = comm.log_summary(return_dict=True)["summary"]
    latencies_ok = all(row["total_latency_ms"] > 0 for sizes in summary.values() for row in sizes.values())
    if comm.get_rank() == 0:
        counts = {op: {str(size): row["count"] for size, row in sizes.items()} for op, sizes in summary.items()}
        print("RESULT " + json.dumps({"stage": stage, "params": params,
                                      "latencies_ok": latencies_ok, "summary": counts}), flush=True)


if __name__ == "__main__":
    for s in sys.argv[1:]:
        run(int(s))
