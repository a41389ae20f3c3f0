#!/usr/bin/env python3
"""DeepSpeed's zero_to_fp32 for dsrt checkpoints: the full fp32 weights, whatever the stage and world size
that saved them (the fp32 master partitions of every rank are concatenated and cut into parameters).

The output is what DeepSpeed's script writes: a plain state_dict that ``torch.load`` opens (or, with
``--safe_serialization``, a safetensors file), so the model can leave dsrt. Command line, as DeepSpeed's::

    python -m dsrt.utils.zero_to_fp32 CHECKPOINT_DIR OUTPUT [-t TAG] [--safe_serialization] [--max_shard_size 5GB]

OUTPUT is a directory that receives pytorch_model.bin / model.safetensors (DeepSpeed >= 0.15), or a file
name ending in .bin, .pt, .pth or .safetensors (older DeepSpeed's output_file). save_checkpoint copies this
file into every checkpoint folder, as DeepSpeed does; it needs the dsrt package to run.
"""

import argparse
import json
import os
import shutil
import stat
import sys
from collections import OrderedDict

import torch

_FILE_SUFFIXES = (".bin", ".pt", ".pth", ".safetensors")


def get_fp32_state_dict_from_zero_checkpoint(checkpoint_dir, tag=None, exclude_frozen_parameters=False,
                                             lazy_mode=False):
    """An OrderedDict name -> fp32 tensor, loadable with model.load_state_dict(..., strict=False) (tied
    weights appear once, under their first name). dsrt checkpoints never hold frozen parameters, so
    exclude_frozen_parameters changes nothing; lazy_mode returns the same tensors (already in memory)."""
    from dsrt import _C
    return OrderedDict(_C.consolidate_fp32(str(checkpoint_dir), None if tag is None else str(tag)))


def _parse_size(text):
    """huggingface_hub's size strings ("5GB", "500MB", "10KiB") or an int, in bytes."""
    if isinstance(text, int):
        return text
    units = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "KB": 10**3, "MB": 10**6, "GB": 10**9,
             "TB": 10**12, "B": 1}
    upper = str(text).strip().upper()
    for unit, factor in units.items():
        if upper.endswith(unit) and upper[:-len(unit)].strip().replace(".", "", 1).isdigit():
            return int(float(upper[:-len(unit)]) * factor)
    if upper.isdigit():
        return int(upper)
    raise ValueError(f"max_shard_size: expected a size such as '5GB' or '500MB', got '{text}'")


def _save(state_dict, path, safe_serialization):
    if safe_serialization:
        from safetensors.torch import save_file
        save_file({k: v.contiguous() for k, v in state_dict.items()}, path, metadata={"format": "pt"})
    else:
        torch.save(state_dict, path)


def _require_safetensors():
    try:
        import safetensors.torch  # noqa: F401
    except ImportError as e:
        raise ImportError("zero_to_fp32 --safe_serialization needs the safetensors package: "
                          "pip install safetensors") from e


def _write_sharded(state_dict, output_dir, weights_name, max_shard_size, safe_serialization):
    """DeepSpeed's sharding through huggingface_hub (the same shard names and index file)."""
    try:
        from huggingface_hub import split_torch_state_dict_into_shards
    except ImportError as e:
        raise ImportError(f"zero_to_fp32: the weights exceed max_shard_size={max_shard_size}, and sharding them "
                          "as DeepSpeed does needs huggingface_hub: pip install huggingface_hub (or pass a larger "
                          "--max_shard_size)") from e
    pattern = weights_name.replace(".bin", "{suffix}.bin").replace(".safetensors", "{suffix}.safetensors")
    split = split_torch_state_dict_into_shards(state_dict, filename_pattern=pattern, max_shard_size=max_shard_size)
    for shard_file, names in split.filename_to_tensors.items():
        _save({n: state_dict[n] for n in names}, os.path.join(output_dir, shard_file), safe_serialization)
    if split.is_sharded:
        index = {"metadata": split.metadata, "weight_map": split.tensor_to_filename}
        index_name = "model.safetensors.index.json" if safe_serialization else "pytorch_model.bin.index.json"
        with open(os.path.join(output_dir, index_name), "w", encoding="utf-8") as f:
            f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")


def convert_zero_checkpoint_to_fp32_state_dict(checkpoint_dir, output_dir, max_shard_size="5GB",
                                               safe_serialization=False, tag=None, exclude_frozen_parameters=False):
    """Writes the consolidated fp32 state_dict as DeepSpeed does: OUTPUT_DIR/pytorch_model.bin (or
    model.safetensors), sharded with an index file above max_shard_size. An ``output_dir`` ending in .bin,
    .pt, .pth or .safetensors is written as that one file (older DeepSpeed's output_file). Returns the
    paths written."""
    if safe_serialization:
        _require_safetensors()
    state_dict = get_fp32_state_dict_from_zero_checkpoint(checkpoint_dir, tag, exclude_frozen_parameters)
    output_dir = os.fspath(output_dir)
    if output_dir.endswith(_FILE_SUFFIXES) and not os.path.isdir(output_dir):
        parent = os.path.dirname(output_dir)
        if parent:
            os.makedirs(parent, exist_ok=True)
        _save(state_dict, output_dir, safe_serialization or output_dir.endswith(".safetensors"))
        return [output_dir]
    os.makedirs(output_dir, exist_ok=True)
    weights_name = "model.safetensors" if safe_serialization else "pytorch_model.bin"
    total = sum(t.numel() * t.element_size() for t in state_dict.values())
    if max_shard_size is None or total <= _parse_size(max_shard_size):
        path = os.path.join(output_dir, weights_name)
        _save(state_dict, path, safe_serialization)
        return [path]
    before = set(os.listdir(output_dir))
    _write_sharded(state_dict, output_dir, weights_name, max_shard_size, safe_serialization)
    return sorted(os.path.join(output_dir, f) for f in set(os.listdir(output_dir)) - before)


def load_state_dict_from_zero_checkpoint(model, checkpoint_dir, tag=None):
    """Loads the consolidated fp32 weights into ``model`` (on CPU) and returns it."""
    state = get_fp32_state_dict_from_zero_checkpoint(checkpoint_dir, tag)
    model = model.cpu()
    model.load_state_dict(state, strict=False)
    return model


def copy_recovery_script(save_dir):
    """DeepSpeed's _copy_recovery_script: SAVE_DIR/zero_to_fp32.py (this file), executable, which turns the
    checkpoint into weights plain torch loads (python SAVE_DIR/zero_to_fp32.py SAVE_DIR OUTPUT_DIR)."""
    target = os.path.join(os.fspath(save_dir), "zero_to_fp32.py")
    shutil.copyfile(os.path.abspath(__file__), target)
    os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="zero_to_fp32",
                                     description="Consolidate a dsrt (ZeRO) checkpoint into fp32 weights that "
                                                 "torch.load opens, as DeepSpeed's zero_to_fp32.py")
    parser.add_argument("checkpoint_dir", help="the folder holding 'latest' and the tag folders")
    parser.add_argument("output_dir", help="output directory (pytorch_model.bin / model.safetensors), or a file "
                                           "name ending in .bin, .pt, .pth or .safetensors")
    parser.add_argument("--max_shard_size", default="5GB", help="shard above this size (needs huggingface_hub)")
    parser.add_argument("--safe_serialization", action="store_true", help="write safetensors instead of pickle")
    parser.add_argument("-t", "--tag", default=None, help="checkpoint tag (default: the one 'latest' names)")
    parser.add_argument("--exclude_frozen_parameters", action="store_true",
                        help="accepted for DeepSpeed's command line: dsrt checkpoints hold no frozen parameters")
    parser.add_argument("-d", "--debug", action="store_true", help="accepted for DeepSpeed's command line")
    args = parser.parse_args(argv)
    try:
        written = convert_zero_checkpoint_to_fp32_state_dict(args.checkpoint_dir, args.output_dir,
                                                             max_shard_size=args.max_shard_size,
                                                             safe_serialization=args.safe_serialization,
                                                             tag=args.tag)
    except (RuntimeError, ImportError, OSError, ValueError) as e:
        print(f"zero_to_fp32: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(f"zero_to_fp32: wrote {path}")
    return 0


if __name__ == "__main__":
    try:
        import dsrt  # noqa: F401  (a copy in a checkpoint folder runs outside the package)
    except ImportError:
        print("zero_to_fp32: needs the dsrt package (python3 -c 'import dsrt' fails here); "
              "or run ds_to_fp32 CHECKPOINT_DIR OUTPUT_FILE", file=sys.stderr)
        sys.exit(1)
    sys.exit(main())
