"""deepspeed.runtime.zero.offload_config for dsrt: DeepSpeed's enums of offload devices and offloadable states.

The values are DeepSpeed's strings (str enums: ``OffloadDeviceEnum.cpu == "cpu"``), so scripts may compare them
with a config's ``offload_optimizer.device`` or pass them where DeepSpeed takes one. dsrt offloads to the CPU
(docs/zero.md); "nvme" is a name here, not a device dsrt writes to.
"""

from enum import Enum


class OffloadDeviceEnum(str, Enum):
    """ Enum for valid offload devices """
    none = "none"
    cpu = "cpu"
    nvme = "nvme"


class OffloadStateTypeEnum(str, Enum):
    """ Enum for internal buffer types (DeepSpeed 0.16 and later: engine.offload_states) """
    optim_states = "optim_states"
    hp_params = "hp_params"
    lp_params = "lp_params"
    lp_grads = "lp_grads"
    contiguous_grad_buffer = "contiguous_grad_buffer"
