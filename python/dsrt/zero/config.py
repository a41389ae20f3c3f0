"""deepspeed.runtime.zero.config for dsrt: ZeroStageEnum, DeepSpeed's names of the ZeRO stages (an int enum:
``ZeroStageEnum.weights == 3``, comparable with ``engine.zero_optimization_stage()``)."""

from enum import Enum


class ZeroStageEnum(int, Enum):
    """ Enum class for possible zero stages """
    disabled = 0
    optimizer_states = 1
    gradients = 2
    weights = 3
    max_stage = 3
