#pragma once
// Stage 0: plain data parallelism. Gradients are allreduced in buckets during backward (GradReducer),
// and every rank runs the same optimizer update on the whole model. The model's parameters become views
// into one flat fp32 buffer laid out like the flat gradient buffer, so one FlatOptimizer step updates
// the whole model in place without any gather or copy.

#include <memory>

#include "runtime/grad_strategy.h"

namespace dsrt::ddp {

/// Builds the stage-0 strategy; see GradStrategy for the call sequence. Re-points every parameter's
/// storage at a flat buffer (Tensor::set_data: the module keeps the same tensors), so build it after
/// the model is on its final device and dtype. Buffers, masters and optimizer state
/// live on the parameters' device. Throws c10::Error for mixed dtypes/devices or non-float parameters.
std::unique_ptr<GradStrategy> makeDdpStrategy(StrategyContext ctx);

}  // namespace dsrt::ddp
