"""deepspeed.elasticity.config: the exceptions of compute_elastic_config and of an elastic config at initialize,
DeepSpeed's classes. They are also dsrt.DsrtError (a RuntimeError), as every error of dsrt's engine is."""

from dsrt._C import DsrtError


class ElasticityError(DsrtError):
    """Base exception for all elasticity related errors"""


class ElasticityConfigError(ElasticityError):
    """Elasticity configuration error"""


class ElasticityIncompatibleWorldSize(ElasticityError):
    """Attempting to run a world size that is incompatible with a given elastic config"""
