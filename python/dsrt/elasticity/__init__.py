"""deepspeed.elasticity for dsrt: compute_elastic_config (the batch sizes and GPU counts an elastic job may use),
elasticity_enabled, the config constants and DeepSpeed's exception classes (``.config``)."""

from dsrt.elasticity import config, constants
from dsrt.elasticity.constants import ELASTICITY, ENABLED, ENABLED_DEFAULT
from dsrt.elasticity.elasticity import compute_elastic_config, elasticity_enabled, ensure_immutable_elastic_config

__all__ = ["ELASTICITY", "ENABLED", "ENABLED_DEFAULT", "compute_elastic_config", "config", "constants",
           "elasticity_enabled", "ensure_immutable_elastic_config"]
