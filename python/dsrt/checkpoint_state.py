"""client_state of save_checkpoint/load_checkpoint as JSON text for the C++ checkpoint.

Plain JSON values (dict/list/str/int/float/bool/None) are stored as JSON, readable by C++ programs and
dsrt's tools. Anything else (tensors, tuples, numpy values, custom objects) is pickled, as DeepSpeed's
torch.save would, into one base64 field, and comes back as the same objects.
"""

import base64
import json
import pickle

_PICKLED = "__dsrt_pickled_client_state__"


def encode_client_state(state) -> str:
    try:
        text = json.dumps(state, allow_nan=False)
        if json.loads(text) == state:
            return text
    except (TypeError, ValueError):
        pass
    payload = base64.b64encode(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)).decode("ascii")
    return json.dumps({_PICKLED: payload})


def decode_client_state(text: str):
    state = json.loads(text) if text else {}
    if isinstance(state, dict) and set(state) == {_PICKLED}:
        return pickle.loads(base64.b64decode(state[_PICKLED]))
    return state


def deepspeed_client_state(client, saved, module_only, optimizer_states, lr_scheduler_states, engine_schedules,
                           client_scheduler_state=None):
    """The client_state DeepSpeed's load_checkpoint returns under the partial-load options.

    DeepSpeed's _load_checkpoint hands back every checkpoint entry it did not restore: with
    load_module_only the counters (global_steps, global_samples, skipped_steps, dp_world_size,
    mp_world_size), with load_lr_scheduler_states=False the saved 'lr_scheduler' state dict (the config
    scheduler's {'last_batch_iteration': N} from ``saved``, the engine state the checkpoint holds, or the
    client scheduler's saved state_dict; None without a scheduler) and with load_optimizer_states=False
    'optimizer' (None where ZeRO/bf16 keep it in partition files; dsrt returns None at every stage). The
    script's own keys win, as they overwrote DeepSpeed's at save time (state.update(client_state)).
    """
    if not isinstance(client, dict):
        return client
    extra = {}
    if module_only:
        steps = saved.get("global_steps", 0)
        extra.update(global_steps=steps,
                     global_samples=saved.get("global_samples", steps * saved.get("train_batch_size", 0)),
                     skipped_steps=saved.get("skipped_steps", 0),
                     dp_world_size=saved.get("dp_world_size", 1),
                     mp_world_size=1)
    if not lr_scheduler_states:
        if engine_schedules:
            last = saved.get("last_batch_iteration", saved.get("global_steps", 0) - 1)
            extra["lr_scheduler"] = {"last_batch_iteration": last}
        else:
            extra["lr_scheduler"] = client_scheduler_state
    if not optimizer_states:
        extra["optimizer"] = None
    if not extra:
        return client
    extra.update(client)
    return extra
