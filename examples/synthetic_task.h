#pragma once
// The example's deterministic synthetic regression task. Sample i is a pure function of (seed, i):
// x = `dim` uniform values in [-1, 1) from a counter-based hash, y = sin(3 x) * roll(x, 1). Any world
// size, accumulation setting or resumed run therefore sees exactly the same global batches.

#include <ATen/ATen.h>

#include <cstdint>

namespace dsrt::examples {

/// Global index of the s-th sample of `rank`'s micro-batch number `microIndex` (counted over the whole
/// run: step * gradAccumSteps + microStep), sharded like torch's DistributedSampler without shuffling:
/// rank r takes every worldSize-th sample. One optimizer step t therefore covers global indices
/// [t * trainBatch, (t + 1) * trainBatch) whatever the world size.
inline int64_t globalIndex(int64_t microIndex, int64_t microBatch, int64_t s, int rank, int worldSize) {
  return (microIndex * microBatch + s) * worldSize + rank;
}

/// splitmix64: a counter-based generator, so sample i needs no state from samples before it.
inline uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Inputs [microBatch, dim] and targets [microBatch, dim] of one rank's micro-batch.
inline std::pair<at::Tensor, at::Tensor> microBatch(uint64_t seed, int64_t microIndex, int64_t microBatch,
                                                    int64_t dim, int rank, int worldSize) {
  at::Tensor x = at::empty({microBatch, dim}, at::kFloat);
  float* out = x.data_ptr<float>();
  for (int64_t s = 0; s < microBatch; ++s) {
    const uint64_t base = mix(seed ^ mix(static_cast<uint64_t>(globalIndex(microIndex, microBatch, s, rank, worldSize))));
    for (int64_t j = 0; j < dim; ++j) {
      const uint64_t bits = mix(base + static_cast<uint64_t>(j));
      out[s * dim + j] = static_cast<float>(static_cast<double>(bits >> 40) / double(1ull << 24) * 2.0 - 1.0);
    }
  }
  at::Tensor y = at::sin(x * 3.0) * at::roll(x, {1}, {1});
  return {x, y};
}

}  // namespace dsrt::examples
