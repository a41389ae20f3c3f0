"""deepspeed.elasticity.config: the exceptions compute_elastic_config raises, DeepSpeed's classes."""


class ElasticityError(Exception):
    """Base exception for all elasticity related errors"""


class ElasticityConfigError(ElasticityError):
    """Elasticity configuration error"""


class ElasticityIncompatibleWorldSize(ElasticityError):
    """Attempting to run a world size that is incompatible with a given elastic config"""
