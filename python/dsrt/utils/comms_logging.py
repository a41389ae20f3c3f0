"""deepspeed.utils.comms_logging for dsrt: the comms_logger's records and DeepSpeed's summary table
(deepspeed/utils/comms_logging.py): per collective and message size, the count, total and trimmed-mean
latency, algorithmic and bus bandwidth in Gbps."""

import math
from statistics import mean


def convert_size(size_bytes):
    """DeepSpeed's human-readable size: 1024-based, two decimals ("4.0 KB")."""
    if size_bytes == 0:
        return "0B"
    size_name = ("B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")
    i = int(math.floor(math.log(size_bytes, 1024)))
    return "%s %s" % (round(size_bytes / math.pow(1024, i), 2), size_name[i])


def trim_mean(data, trim_percent):
    """The mean of ``data`` without the lowest and highest ``trim_percent`` (DeepSpeed's utils.timer)."""
    if not data:
        return 0
    data = sorted(data)
    k = int(round(len(data) * trim_percent))
    return mean(data[k:len(data) - k])


# Bytes each rank moves per byte of message, for the ops DeepSpeed knows (the NCCL-tests bus bandwidth).
_GATHER_LIKE = ("all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor")
_POINT_LIKE = ("send", "recv", "isend", "irecv", "broadcast", "reduce", "gather", "scatter", "barrier")


def calc_bw_log(comm_op, size, duration, world_size):
    """(algbw, busbw) in Gbps of ``size`` bytes moved by ``comm_op`` in ``duration`` ms (DeepSpeed's
    formulas; ms and Gbps make the factor 8 / 1e6)."""
    n = world_size
    if duration <= 0:
        return 0.0, 0.0
    if comm_op in ("all_to_all_single", "all_to_all"):
        tput = size / duration
        busbw = tput * ((n - 1) / n)
    elif comm_op in _GATHER_LIKE:
        size *= n
        tput = size / duration
        busbw = tput * ((n - 1) / n)
    elif comm_op in ("all_reduce", "all_reduce_coalesced", "inference_all_reduce"):
        tput = size * 2 / duration
        busbw = (size / duration) * (2 * (n - 1) / n)
    elif comm_op in _POINT_LIKE:
        tput = size / duration
        busbw = tput
    else:
        raise ValueError(f"comms_logger: no bandwidth formula for '{comm_op}'")
    return tput * 8 / 1e6, busbw * 8 / 1e6


class CommsLogger:
    """Records (op, log name, latency ms, message bytes); configure() reads the comms_logger block.

    The engine's own collectives (gradient all_reduce, ZeRO reduce_scatter_tensor / all_gather_into_tensor, ...)
    are issued by libdsrt, not through deepspeed.comm: it records them in a runtime log (dsrt._C.CommsLog)
    that attach_runtime() connects. The switches below are pushed to it, so it records exactly what this
    logger would, and drain() moves its records here; log_all() drains first."""

    def __init__(self):
        self.comms_dict = {}
        self._runtime = None
        self._world_size = 1
        self._rank = 0
        self._enabled = False
        self.verbose = False
        self.debug = False
        self._prof_all = True
        self._prof_ops = []

    # enabled, prof_all and prof_ops are mirrored into the runtime log on every change (scripts set
    # them directly, as deepspeed.comm.configure does).
    @property
    def enabled(self):
        return self._enabled

    @enabled.setter
    def enabled(self, value):
        self._enabled = bool(value)
        self._sync()

    @property
    def prof_all(self):
        return self._prof_all

    @prof_all.setter
    def prof_all(self, value):
        self._prof_all = bool(value)
        self._sync()

    @property
    def prof_ops(self):
        return self._prof_ops

    @prof_ops.setter
    def prof_ops(self, value):
        self._prof_ops = list(value)
        self._sync()

    def attach_runtime(self, runtime_log, world_size, rank):
        """Connects the engine's collective log (dsrt._C.CommsLog) of a group of ``world_size`` ranks."""
        self._runtime = runtime_log
        self._world_size = world_size
        self._rank = rank
        self._sync()

    def _sync(self):
        if self._runtime is not None:
            self._runtime.configure(self._enabled, self._prof_all, self._prof_ops)

    def drain(self):
        """Appends the engine's collectives recorded since the last drain (their op name is their log name)."""
        if self._runtime is None:
            return
        for op, msg_size, latency in self._runtime.take():
            self.append(op, op, latency, msg_size, self._world_size, self._rank)

    def configure(self, block):
        """``block``: the ds_config's comms_logger dict (DeepSpeed's defaults for absent keys)."""
        self.verbose = bool(block.get("verbose", False))
        self.debug = bool(block.get("debug", False))
        self.prof_all = bool(block.get("prof_all", True))
        self.prof_ops = list(block.get("prof_ops", []))
        self.enabled = bool(block.get("enabled", False))

    def start_profiling_comms(self):
        self.prof_all = True

    def stop_profiling_comms(self):
        self.prof_all = False

    def start_profiling_op(self, op_name_list):
        self.prof_ops = list(set(self.prof_ops) | set(op_name_list))

    def stop_profiling_op(self, op_name_list):
        self.prof_ops = [op for op in self.prof_ops if op not in op_name_list]

    def wants(self, log_name, prof=False):
        return self.enabled and (prof or self.prof_all or log_name in self.prof_ops)

    def append(self, raw_name, record_name, latency, msg_size, world_size, rank=0):
        algbw, busbw = calc_bw_log(raw_name, msg_size, latency, world_size)
        sizes = self.comms_dict.setdefault(record_name, {})
        if msg_size in sizes:
            sizes[msg_size][0] += 1
            sizes[msg_size][1].append(latency)
            sizes[msg_size][2].append(algbw)
            sizes[msg_size][3].append(busbw)
        else:
            sizes[msg_size] = [1, [latency], [algbw], [busbw]]
        if self.verbose and rank == 0:
            print(f"[Rank 0] comm op: {record_name} | time (ms): {latency:.2f} | msg size: {convert_size(msg_size)} | "
                  f"algbw (Gbps): {algbw:.2f} | busbw (Gbps): {busbw:.2f}", flush=True)

    def reset_data(self):
        self.comms_dict.clear()

    def log_all(self, print_log=True, return_dict=False):
        """DeepSpeed's table (one row per op and message size, latencies in ms, bandwidths in Gbps);
        with return_dict, the same numbers as {"summary": {op: {bytes: {...}}}}."""
        self.drain()
        summary = {}
        if print_log:
            print(f"{'Comm. Op': <20}{'Message Size': <20}{'Count': <20}{'Total Latency(ms)': <20}"
                  f"{'Avg Latency(ms)': <20}{'tput_avg (Gbps)': <20}{'busbw_avg (Gbps)': <20}")
        for record_name, sizes in list(self.comms_dict.items()):
            if print_log:
                print(record_name)
            summary[record_name] = {}
            for msg_size, vals in sorted(sizes.items()):
                count, total_lat = vals[0], sum(vals[1])
                avg_lat, avg_algbw, avg_busbw = (trim_mean(v, 0.1) for v in vals[1:4])
                summary[record_name][msg_size] = {
                    "count": count, "total_latency_ms": total_lat, "avg_latency_ms": avg_lat,
                    "tput_avg_gbps": avg_algbw, "busbw_avg_gbps": avg_busbw, "msg_size_bytes": msg_size,
                    "msg_size_str": convert_size(msg_size)}
                if print_log:
                    print(f"{' ': <20}{convert_size(msg_size): <20}{count: <20}{total_lat: <20.2f}"
                          f"{avg_lat: <20.2f}{avg_algbw: <20.2f}{avg_busbw: <20.2f}")
        if print_log:
            print("", end="", flush=True)
        return {"summary": summary} if return_dict else None
