"""deepspeed.comm for dsrt: init_distributed() plus the torch.distributed calls scripts use through it.

The process group is torch.distributed's default group, and the engine runs its collectives on that same
C++ object, so a script's own ``torch.distributed`` calls (``get_rank``, ``barrier``, ``all_reduce`` of a
metric) and the engine share one group.
"""

import atexit
import gc
import os
import sys
import time
import weakref
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp  # noqa: F401  (deepspeed.comm.ReduceOp)

from dsrt import _C
from dsrt.utils.comms_logging import CommsLogger

# DeepSpeed's default: 30 minutes, or DEEPSPEED_TIMEOUT minutes.
_DEFAULT_TIMEOUT_MINUTES = 30


def _default_timeout() -> timedelta:
    return timedelta(minutes=int(os.environ.get("DEEPSPEED_TIMEOUT", _DEFAULT_TIMEOUT_MINUTES)))


def _default_backend() -> str:
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "nccl"
    return "gloo"


def init_distributed(dist_backend=None, auto_mpi_discovery=True, distributed_port=29500, verbose=True,
                     timeout=None, init_method=None, dist_init_required=None, config=None, rank=-1,
                     world_size=-1):
    """deepspeed.init_distributed(): creates torch.distributed's default group unless one exists.

    The rank comes from dsrun/torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, else
    from OpenMPI, MPICH/Intel MPI or Slurm variables (exported as those names, as DeepSpeed's MPI discovery
    does); a process with none of them is a world of one. Raises ValueError naming the missing variables.
    """
    _destroy_group_at_exit()
    if dist.is_initialized():
        return
    if dist_init_required is False:
        return
    if "MASTER_PORT" not in os.environ and "RANK" not in os.environ:
        os.environ.setdefault("MASTER_PORT", str(distributed_port))
    env = _C.resolve_rank_env()
    if rank >= 0:
        env["rank"] = rank
    if world_size > 0:
        env["world_size"] = world_size
    if env["source"] != "env" and not auto_mpi_discovery:
        raise ValueError(f"init_distributed: RANK/WORLD_SIZE are not set and auto_mpi_discovery is off "
                         f"(found {env['source']} variables)")
    # Export what was discovered under the names torch's env:// rendezvous and user code read.
    for name, key in (("RANK", "rank"), ("WORLD_SIZE", "world_size"), ("LOCAL_RANK", "local_rank"),
                      ("MASTER_ADDR", "master_addr"), ("MASTER_PORT", "master_port")):
        os.environ.setdefault(name, str(env[key]))
    backend = dist_backend or _default_backend()
    if backend == "nccl" and torch.cuda.is_available():
        # Each rank's GPU is LOCAL_RANK among CUDA_VISIBLE_DEVICES (DeepSpeed's engine sets it so); NCCL's
        # communicator binds to the current device, so this must come before the group exists.
        torch.cuda.set_device(int(env["local_rank"]))
    timeout = timeout or _default_timeout()
    if verbose and env["rank"] == 0:
        print(f"[dsrt] initializing torch.distributed: backend={backend} world_size={env['world_size']} "
              f"(rank variables from {env['source']})", flush=True)
    if env["world_size"] == 1 and init_method is None:
        # One rank needs no rendezvous: an in-memory store keeps MASTER_PORT free.
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
    else:
        dist.init_process_group(backend, init_method=init_method or "env://", rank=env["rank"],
                                world_size=env["world_size"], timeout=timeout)


_exit_hook_registered = False


_engines_holding_the_group = weakref.WeakSet()


def _release_at_exit(engine):
    """Called by every DeepSpeedEngine: the exit hook lets its native engine go of the group if it still lives."""
    _engines_holding_the_group.add(engine)


def _destroy_default_group():
    # An engine holds the group (its buckets and gathers do): freed only in the interpreter's teardown, it would
    # take Gloo's threads down there all the same. One built in a script's main() outlives it in a reference
    # cycle (module hooks, optimizer and scheduler refer back to it): collect those while Python is whole. One
    # kept in a module global (a script written at top level) lives on: its native engine lets go of the group.
    gc.collect()
    for engine in list(_engines_holding_the_group):
        engine._engine.release()
    _forget_groups_in_default_arguments()
    if dist.is_initialized():
        dist.destroy_process_group()


def _forget_groups_in_default_arguments():
    # torch 2.x: torch.distributed.nn.functional's functions take `group=group.WORLD`, evaluated at import. Imported
    # after the group exists (the first torch optimizer built imports torch._dynamo, which imports it), they hold
    # the group past destroy_process_group, into the teardown. None means the default group there all the same.
    module = sys.modules.get("torch.distributed.nn.functional")
    for fn in vars(module).values() if module is not None else ():
        defaults = getattr(fn, "__defaults__", None)
        if getattr(fn, "__module__", None) == module.__name__ and defaults and \
                any(isinstance(d, dist.ProcessGroup) for d in defaults):
            fn.__defaults__ = tuple(None if isinstance(d, dist.ProcessGroup) else d for d in defaults)


def _destroy_group_at_exit():
    # A script that ends without destroy_process_group() leaves Gloo's threads to die in the interpreter's
    # teardown, which aborts the rank now and then ("terminate called without an active exception",
    # pytorch#190489) and turns a finished job into a failed one. Destroying the group while Python is still
    # whole makes the exit orderly; the hook does nothing when the script destroyed it itself.
    global _exit_hook_registered
    if not _exit_hook_registered:
        atexit.register(_destroy_default_group)
        _exit_hook_registered = True


def is_initialized() -> bool:
    return dist.is_initialized()


def get_rank(group=None) -> int:
    return dist.get_rank(group)


def get_world_size(group=None) -> int:
    return dist.get_world_size(group)


def get_local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


# ---- collectives, timed by the comms_logger when its block is enabled (DeepSpeed's timed_op) ----------
comms_logger = CommsLogger()


def configure_comms_logger(block):
    """Applies the ds_config's comms_logger block (a dict; {} leaves the logger off)."""
    comms_logger.configure(block or {})


def _timed(op, log_name, prof, tensor, call):
    """Runs call(); when the logger wants ``log_name``, records its latency (ms) and message bytes."""
    if not comms_logger.wants(log_name, prof):
        return call()
    start = time.perf_counter()
    try:
        return call()
    finally:
        # DeepSpeed makes the op blocking for the measurement: the device's queue drains first.
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        latency = (time.perf_counter() - start) * 1000.0
        if isinstance(tensor, (list, tuple)):
            size = sum(t.element_size() * t.nelement() for t in tensor)
        else:
            size = 0 if tensor is None else tensor.element_size() * tensor.nelement()
        comms_logger.append(op, log_name, latency, size, dist.get_world_size(), dist.get_rank())


def barrier(group=None, async_op=False, device_ids=None, prof=False, log_name="barrier"):
    return _timed("barrier", log_name, prof, None,
                  lambda: dist.barrier(group, async_op=async_op, device_ids=device_ids))


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False, prof=False, log_name="all_reduce"):
    return _timed("all_reduce", log_name, prof, tensor,
                  lambda: dist.all_reduce(tensor, op=op, group=group, async_op=async_op))


def broadcast(tensor, src, group=None, async_op=False, prof=False, log_name="broadcast"):
    return _timed("broadcast", log_name, prof, tensor,
                  lambda: dist.broadcast(tensor, src, group=group, async_op=async_op))


def all_gather(tensor_list, tensor, group=None, async_op=False, prof=False, log_name="all_gather"):
    return _timed("all_gather", log_name, prof, tensor,
                  lambda: dist.all_gather(tensor_list, tensor, group=group, async_op=async_op))


def reduce(tensor, dst, op=dist.ReduceOp.SUM, group=None, async_op=False, prof=False, log_name="reduce"):
    return _timed("reduce", log_name, prof, tensor,
                  lambda: dist.reduce(tensor, dst, op=op, group=group, async_op=async_op))


def all_gather_into_tensor(output_tensor, tensor, group=None, async_op=False, prof=False,
                           log_name="all_gather_into_tensor"):
    gather = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base  # torch 1.13's name
    return _timed("all_gather_into_tensor", log_name, prof, tensor,
                  lambda: gather(output_tensor, tensor, group=group, async_op=async_op))


def reduce_scatter_tensor(output_tensor, tensor, op=dist.ReduceOp.SUM, group=None, async_op=False, prof=False,
                          log_name="reduce_scatter_tensor"):
    scatter = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base  # torch 1.13's name
    return _timed("reduce_scatter_tensor", log_name, prof, tensor,
                  lambda: scatter(output_tensor, tensor, op=op, group=group, async_op=async_op))


def all_to_all_single(output, tensor, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False,
                      prof=False, log_name="all_to_all_single"):
    return _timed("all_to_all_single", log_name, prof, tensor,
                  lambda: dist.all_to_all_single(output, tensor, output_split_sizes, input_split_sizes, group=group,
                                                 async_op=async_op))


def configure(deepspeed_config=None, enabled=None, prof_all=None, prof_ops=None, verbose=None, debug=None):
    """deepspeed.comm.configure(): the comms logger's switches; ``deepspeed_config`` (a ds_config dict) sets
    them from its comms_logger block, then each argument that is not None overrides one."""
    if isinstance(deepspeed_config, dict):
        configure_comms_logger(deepspeed_config.get("comms_logger"))
    for name, value in (("enabled", enabled), ("prof_all", prof_all), ("prof_ops", prof_ops), ("verbose", verbose),
                        ("debug", debug)):
        if value is not None:
            setattr(comms_logger, name, list(value) if name == "prof_ops" else bool(value))


def log_summary(show_straggler=False, return_dict=False):
    """deepspeed.comm.log_summary(): rank 0 prints the comms_logger's table (ops issued through this
    module and the engine's own collectives); collective, between two barriers as DeepSpeed's.
    show_straggler is accepted and ignored."""
    barrier(log_name="log_summary_barrier")
    result = comms_logger.log_all(print_log=dist.get_rank() == 0, return_dict=return_dict)
    barrier(log_name="log_summary_barrier")
    return result


def reset_log():
    comms_logger.drain()
    comms_logger.reset_data()


# The engine's collectives go to this log (one per process, as comms_logger), and from it to comms_logger.
_engine_comms_log = _C.CommsLog()


def _dist_context(local_rank: int):
    """The engine's view (dsrt._C.DistContext) of torch.distributed's default group; its collectives are
    recorded for comms_logger."""
    group = dist.distributed_c10d._get_default_group()
    comms_logger.attach_runtime(_engine_comms_log, group.size(), group.rank())
    return _C.dist_context(group, local_rank, "torch.distributed", _engine_comms_log)


def __getattr__(name):
    # deepspeed.comm mirrors torch.distributed: what dsrt does not wrap (ReduceOp, reduce_scatter,
    # all_gather_into_tensor, new_group, send/recv, get_backend, ...) is torch.distributed's own, acting on
    # the same default group the engine uses.
    if not name.startswith("_") and hasattr(dist, name):
        return getattr(dist, name)
    raise AttributeError(f"module 'dsrt.comm' has no attribute '{name}'")
