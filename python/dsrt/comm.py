"""deepspeed.comm for dsrt: init_distributed() plus the torch.distributed calls scripts use through it.

The process group is torch.distributed's default group, and the engine runs its collectives on that same
C++ object, so a script's own ``torch.distributed`` calls (``get_rank``, ``barrier``, ``all_reduce`` of a
metric) and the engine share one group.
"""

import atexit
import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp  # noqa: F401  (deepspeed.comm.ReduceOp)

from dsrt import _C

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


def _destroy_default_group():
    if dist.is_initialized():
        dist.destroy_process_group()


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


def barrier(group=None):
    return dist.barrier(group)


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    return dist.all_reduce(tensor, op=op, group=group, async_op=async_op)


def broadcast(tensor, src, group=None, async_op=False):
    return dist.broadcast(tensor, src, group=group, async_op=async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    return dist.all_gather(tensor_list, tensor, group=group, async_op=async_op)


def _dist_context(local_rank: int):
    """The engine's view (dsrt._C.DistContext) of torch.distributed's default group."""
    group = dist.distributed_c10d._get_default_group()
    return _C.dist_context(group, local_rank, "torch.distributed")


def __getattr__(name):
    # deepspeed.comm mirrors torch.distributed: what dsrt does not wrap (ReduceOp, reduce_scatter,
    # all_gather_into_tensor, new_group, send/recv, get_backend, ...) is torch.distributed's own, acting on
    # the same default group the engine uses.
    if not name.startswith("_") and hasattr(dist, name):
        return getattr(dist, name)
    raise AttributeError(f"module 'dsrt.comm' has no attribute '{name}'")
