"""deepspeed.elasticity.elasticity: compute_elastic_config and elasticity_enabled, as DeepSpeed's.

The algorithm is libdsrt's elastic/ library (the code ds_elastic, dsrun's elastic controller and the engine's
config use, checked against DeepSpeed's results case by case in tests/elastic), so a scheduler script, the
launcher and the ranks agree. This layer keeps DeepSpeed's Python contract: its arguments and return shapes; the
library's errors arrive as DeepSpeed's exception classes (python/csrc/errors.cc), as do an elastic config's at
initialize.
"""

import json
import os

from dsrt import _C
from dsrt.elasticity.config import ElasticityConfigError, ElasticityError
from dsrt.elasticity.constants import (DEEPSPEED_ELASTICITY_CONFIG, ELASTICITY, ENABLED, ENABLED_DEFAULT, MICRO_BATCHES,
                                       MINIMUM_DEEPSPEED_VERSION)
from dsrt.utils.logging import logger

def elasticity_enabled(ds_config: dict):
    if ELASTICITY not in ds_config:
        return False
    return ds_config[ELASTICITY].get(ENABLED, ENABLED_DEFAULT)


def ensure_immutable_elastic_config(runtime_elastic_config_dict: dict):
    """DeepSpeed's: the elasticity block the resource scheduler planned with (DEEPSPEED_ELASTICITY_CONFIG) must
    agree with the runtime's on max_train_batch_size, micro_batch_sizes and version (ElasticityConfigError
    naming the first that differs); without the variable, a warning that nothing can be guaranteed."""
    if DEEPSPEED_ELASTICITY_CONFIG not in os.environ:
        logger.warning("Unable to find DEEPSPEED_ELASTICITY_CONFIG environment variable, cannot guarantee resource "
                       "scheduler will scale this job using compatible GPU counts.")
        return
    scheduler = _fields(json.loads(os.environ[DEEPSPEED_ELASTICITY_CONFIG]), DEEPSPEED_ELASTICITY_CONFIG)
    runtime = _fields(runtime_elastic_config_dict, "the runtime's elasticity block")
    for key in ("max_acceptable_batch_size", "micro_batches", "version"):
        if runtime[key] != scheduler[key]:
            raise ElasticityConfigError(f"Elastic config '{key}={scheduler[key]}' seen by resource scheduler does not "
                                        f"match config passed to runtime {key}={runtime[key]}")


def _fields(block, source):
    """What DeepSpeed's ElasticityConfig(block) keeps of ``block``, validated as it validates it."""
    result = _C.elastic_config_fields(json.dumps(block), source)
    return {"max_acceptable_batch_size": result["max_acceptable_batch_size"],
            "micro_batches": list(result["micro_batches"]), "version": json.loads(result["version_json"])}


def _release(version):
    """(major, minor, patch) of a version string such as "0.14.4+dsrt" or "0.2"."""
    numbers = []
    for part in str(version).split("+")[0].split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit())
        numbers.append(int(digits) if digits else 0)
    return tuple(numbers + [0] * (3 - len(numbers)))


def compute_elastic_config(ds_config: dict, target_deepspeed_version: str, world_size=0, return_microbatch=False):
    """DeepSpeed's compute_elastic_config: (final_batch_size, valid_gpus), plus the micro batch size per GPU
    when ``world_size`` > 0 or ``return_microbatch``. ElasticityConfigError for a missing, disabled or invalid
    elasticity block, ElasticityError for a ``target_deepspeed_version`` older than elasticity,
    ElasticityIncompatibleWorldSize when ``world_size`` is not one of the valid GPU counts."""
    if not isinstance(ds_config, dict):
        raise ValueError("Expected ds_config to be a dictionary but received "
                         f"a {type(ds_config)}, containing: {ds_config}")
    result = _C.compute_elastic_config(json.dumps(ds_config), int(world_size), os.environ.get("WORLD_SIZE"))
    if _release(target_deepspeed_version) < _release(MINIMUM_DEEPSPEED_VERSION):
        raise ElasticityError(f"Target deepspeed version of {target_deepspeed_version} is not compatible with minimum "
                              f"version {MINIMUM_DEEPSPEED_VERSION} supporting elasticity.")
    final_batch_size, valid_gpus = result["final_batch_size"], result["valid_gpus"]
    logger.info(f"Valid World Size (GPUs / Model Parallel Size): {valid_gpus}")
    if world_size > 0:
        return final_batch_size, valid_gpus, result["micro_batch_size"]
    if return_microbatch:
        if result["candidate_micro_batch_size"] is not None:  # version 0.2
            return final_batch_size, valid_gpus, result["candidate_micro_batch_size"]
        # Version 0.1 divides by world_size here, as DeepSpeed does: with none given that is its
        # ZeroDivisionError.
        for micro in sorted(set(ds_config[ELASTICITY][MICRO_BATCHES]), reverse=True):
            if final_batch_size // world_size % micro == 0:
                return final_batch_size, valid_gpus, micro
        raise AssertionError(f"Unable to find divisible micro batch size world_size={world_size}, "
                             f"final_batch_size={final_batch_size}, and  micro_batches="
                             f"{ds_config[ELASTICITY][MICRO_BATCHES]}.")
    return final_batch_size, valid_gpus
