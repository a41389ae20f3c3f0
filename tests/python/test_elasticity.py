"""deepspeed.elasticity.compute_elastic_config from Python, as DeepSpeed's tests/unit/elasticity/test_elastic.py
checks it: the same batch sizes, GPU counts and micro batches, and DeepSpeed's exception classes. The algorithm
is libdsrt's elastic/ library (its golden cases against DeepSpeed: tests/elastic); these check the Python
contract. One process, no ranks."""

import json

import pytest
import torch

import dsrt as deepspeed
from dsrt.elasticity.config import ElasticityConfigError, ElasticityError, ElasticityIncompatibleWorldSize

VERSION = "0.14.4"


@pytest.fixture
def ds_config():
    return {"elasticity": {"enabled": True, "max_train_batch_size": 10000, "micro_batch_sizes": [8, 12, 16, 17],
                           "min_gpus": 32, "max_gpus": 1500, "min_time": 20, "version": 0.1}}


def compute(ds_config, **kwargs):
    return deepspeed.elasticity.compute_elastic_config(ds_config=ds_config, target_deepspeed_version=VERSION, **kwargs)


def test_basic_10k(ds_config):
    final_batch_size, valid_gpus = compute(ds_config)
    for gpus in valid_gpus:
        assert final_batch_size % gpus == 0
        assert any(final_batch_size // gpus % mb == 0 for mb in ds_config["elasticity"]["micro_batch_sizes"])
    assert len(valid_gpus) == 23 and final_batch_size == 9792


def test_a_world_size_gets_the_largest_micro_batch_that_divides(ds_config):
    assert compute(ds_config, world_size=64) == (9792, compute(ds_config)[1], 17)


def test_proper_micro_batch():
    """DeepSpeed 0.14's result (the version the compat package claims): batch 42 over the config's limit of 32
    (later DeepSpeed releases cap it, and change this case to world size 4)."""
    ds_config = {"elasticity": {"enabled": True, "max_train_batch_size": 32, "micro_batch_sizes": [1, 2, 3, 7],
                                "min_gpus": 1, "max_gpus": 1500, "version": 0.1}}
    assert compute(ds_config, world_size=7) == (42, [1, 2, 3, 6, 7, 14, 21, 42], 3)


def test_version_0_2_returns_its_candidate_micro_batch_and_reads_world_size(ds_config, monkeypatch):
    ds_config["elasticity"].update(version=0.2, model_parallel_size=4, num_gpus_per_node=8)
    monkeypatch.setenv("WORLD_SIZE", "16")
    # DeepSpeed 0.14.4's elasticity.py gives exactly this for the block (run through docs/elastic.md's shim).
    assert compute(ds_config, return_microbatch=True) == (9996, [4], 16)
    monkeypatch.delenv("WORLD_SIZE")
    with pytest.raises(ElasticityConfigError, match="WORLD_SIZE"):
        compute(ds_config)


def test_version_0_1_with_return_microbatch_and_no_world_size_divides_by_zero_as_deepspeed(ds_config):
    with pytest.raises(ZeroDivisionError):
        compute(ds_config, return_microbatch=True)


@pytest.mark.parametrize("change,error", [
    (lambda c: c.update(enabled=False), ElasticityConfigError),
    (lambda c: c.update(version="0.3"), ElasticityError),
    (lambda c: c.pop("max_train_batch_size"), ElasticityError),
    (lambda c: c.pop("micro_batch_sizes"), ElasticityError),
    (lambda c: c.update(model_parallel_size=4, num_gpus_per_node=8, version=0.1), ElasticityError),
    (lambda c: c.update(micro_batch_sizes=[1, 4, -1, 2, -10]), ElasticityError),
    (lambda c: c.update(min_gpus=-1), ElasticityError),
    (lambda c: c.update(max_gpus=-1), ElasticityError),
    (lambda c: c.update(micro_batch_sizes=5), ElasticityError),
    (lambda c: c.update(micro_batch_sizes=["a", None, 0.5]), ElasticityError),
    (lambda c: c.update(micro_batch_sizes=[2, 0.5, 4]), ElasticityError),
])
def test_what_deepspeed_refuses_raises_its_exception_class(ds_config, change, error):
    change(ds_config["elasticity"])
    with pytest.raises(error):
        compute(ds_config)


def test_an_empty_block_a_world_size_outside_the_list_and_an_old_target_are_refused(ds_config):
    with pytest.raises(ElasticityError):
        compute({"elasticity": {"enabled": True}})
    with pytest.raises(ElasticityIncompatibleWorldSize, match="world size 128 is not one of the valid GPU counts"):
        compute(ds_config, world_size=128)
    with pytest.raises(ElasticityError, match="Target deepspeed version of 0.2 is not compatible with minimum "
                                              "version 0.3.8 supporting elasticity."):
        deepspeed.elasticity.compute_elastic_config(ds_config=ds_config, target_deepspeed_version="0.2")
    with pytest.raises(ValueError, match="Expected ds_config to be a dictionary"):
        compute("ds_config.json")


def test_model_parallel_version_0_2_needs_gpus_per_node_divisible(ds_config):
    ds_config["elasticity"].update(model_parallel_size=16, num_gpus_per_node=8, version=0.2)
    with pytest.raises(ElasticityError):
        compute(ds_config, world_size=16)


def test_elasticity_enabled(ds_config):
    assert deepspeed.elasticity.elasticity_enabled(ds_config)
    assert not deepspeed.elasticity.elasticity_enabled({})
    assert not deepspeed.elasticity.elasticity_enabled({"elasticity": {}})


def engine_config(**elasticity):
    """DeepSpeed's TestNonElasticBatchParams config (its Lamb replaced by Adam: dsrt has no Lamb engine)."""
    block = {"enabled": True, "max_train_batch_size": 4, "micro_batch_sizes": [1, 2, 3, 4], "min_gpus": 1,
             "max_gpus": 4, "min_time": 20, "version": 0.1, **elasticity}
    return {"train_batch_size": 2, "steps_per_print": 1, "optimizer": {"type": "Adam", "params": {"lr": 0.00015}},
            "gradient_clipping": 1.0, "elasticity": block}


def initialize(config):
    model = torch.nn.Linear(10, 10)
    return deepspeed.initialize(config=config, model=model, model_parameters=model.parameters())[0]


def test_initialize_refuses_non_elastic_batch_keys_with_deepspeeds_class():
    with pytest.raises(ElasticityConfigError, match="train_batch_size is set but elasticity controls the batch size"):
        initialize(engine_config())


def test_initialize_with_ignore_non_elastic_batch_info_takes_the_elastic_batch():
    engine = initialize(engine_config(ignore_non_elastic_batch_info=True))
    # DeepSpeed 0.14.4's compute_elastic_config for this block on 1 rank: (12, [1, 2, 3, 4], 4).
    assert (engine.train_batch_size(), engine.train_micro_batch_size_per_gpu()) == (12, 4)


def test_initialize_refuses_a_block_the_scheduler_did_not_see(monkeypatch):
    scheduler = engine_config(ignore_non_elastic_batch_info=True)["elasticity"]
    scheduler["max_train_batch_size"] = 27
    monkeypatch.setenv("DEEPSPEED_ELASTICITY_CONFIG", json.dumps(scheduler))
    with pytest.raises(ElasticityError, match="DEEPSPEED_ELASTICITY_CONFIG"):
        initialize(engine_config(ignore_non_elastic_batch_info=True))
    assert issubclass(ElasticityError, deepspeed.DsrtError)  # dsrt's errors stay catchable as one class


def test_ensure_immutable_elastic_config_compares_what_the_scheduler_saw(ds_config, monkeypatch, caplog):
    block = ds_config["elasticity"]
    monkeypatch.delenv("DEEPSPEED_ELASTICITY_CONFIG", raising=False)
    deepspeed.elasticity.ensure_immutable_elastic_config(block)  # no variable: a warning only
    monkeypatch.setenv("DEEPSPEED_ELASTICITY_CONFIG", json.dumps(block))
    deepspeed.elasticity.ensure_immutable_elastic_config(dict(block))
    for key, value, field in (("max_train_batch_size", 27, "max_acceptable_batch_size"),
                              ("micro_batch_sizes", [8, 12], "micro_batches"), ("version", 0.2, "version")):
        changed = dict(block, **{key: value})
        with pytest.raises(ElasticityConfigError, match=f"Elastic config '{field}=.*' seen by resource scheduler does "
                                                        f"not match config passed to runtime {field}="):
            deepspeed.elasticity.ensure_immutable_elastic_config(changed)
    with pytest.raises(ElasticityConfigError, match="min_gpus"):
        deepspeed.elasticity.ensure_immutable_elastic_config(dict(block, min_gpus=-1))
