#pragma once
// The partial-load switches of DeepSpeed's engine.load_checkpoint (deepspeed/runtime/engine.py
// load_checkpoint / _load_checkpoint), for Engine::load_checkpoint. The defaults restore everything
// (model, optimizer, scheduler, counters, loss scaler), which is what a resume wants.
//
//                       weights  optimizer state  scheduler position  counters  fp16 loss scaler
//   defaults            yes      yes              yes                 yes       yes
//   optimizerStates=0   yes      fresh            per lrScheduler..   yes       fresh
//   lrSchedulerStates=0 yes      per optimizer..  fresh               yes       per optimizer..
//   moduleOnly          yes      fresh            fresh               fresh     fresh
// "fresh" means the engine keeps what it has (a new engine: zero Adam moments, step 0, the schedule's
// start). Whenever the optimizer state is not loaded, the weights come from the module file (full
// tensors, any saved world size or ZeRO stage) and the fp32 masters are refreshed from them after the
// 16-bit rounding a mixed-precision model applies, as DeepSpeed's refresh_fp32_params /
// _restore_from_bit16_weights do.

namespace dsrt {

struct LoadCheckpointOptions {
  /// DeepSpeed's load_module_only: only the module weights; counters, scheduler, optimizer and loss
  /// scaler keep the engine's current values.
  bool moduleOnly = false;
  /// DeepSpeed's load_optimizer_states (ignored with moduleOnly).
  bool optimizerStates = true;
  /// DeepSpeed's load_lr_scheduler_states: the scheduler position (ignored with moduleOnly).
  bool lrSchedulerStates = true;
  /// DeepSpeed's load_module_strict: false loads the parameters whose names match and keeps the rest
  /// (runtime/checkpoint/module_weights.h).
  bool strict = true;
};

}  // namespace dsrt
